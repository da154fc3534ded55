-- dates.days_between: whole days between two calendar dates.
-- Part of the bundled `dates` skill; shows a skill's own Lua tool.

local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = (153 * mp + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end

local function parse(text, field)
  local y, m, d = text:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)$")
  y, m, d = tonumber(y), tonumber(m), tonumber(d)
  if not y or m < 1 or m > 12 or d < 1 or d > 31 then
    error(("%s must be a date like 2026-03-01, not %q"):format(field, text))
  end
  local days = days_from_civil(y, m, d)
  -- Reject 2026-02-30 and friends: the date must survive a round trip.
  if hearth.time.format("%Y-%m-%d", days * 86400) ~= text then
    error(("%s: %s is not a real date"):format(field, text))
  end
  return days
end

return {
  name = "days_between",
  description = "Whole days from one date (YYYY-MM-DD) to another; negative when `to` is earlier.",
  risk = "read",
  parameters = {
    type = "object",
    properties = { from = { type = "string" }, to = { type = "string" } },
    required = { "from", "to" },
    additionalProperties = false,
  },
  run = function(args)
    return { days = parse(args.to, "to") - parse(args.from, "from") }
  end,
}
