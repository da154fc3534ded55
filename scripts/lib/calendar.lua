-- calendar: civil dates as day numbers, shared by the `dates` skill's
-- tools. A bundled example of a library: tools load it with
-- `require("calendar")`, and an agent's own lib/calendar.lua would hide it.

local M = {}

--- Days since 1970-01-01 of a proleptic Gregorian date.
---@param y integer
---@param m integer
---@param d integer
---@return integer
function M.days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = (153 * mp + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end

--- The day number of a `YYYY-MM-DD` date; an error naming `field` if the
--- text is not a real date.
---@param text string
---@param field string
---@return integer
function M.parse(text, field)
  local y, m, d = text:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)$")
  y, m, d = tonumber(y), tonumber(m), tonumber(d)
  if not y or m < 1 or m > 12 or d < 1 or d > 31 then
    error(("%s must be a date like 2026-03-01, not %q"):format(field, text), 2)
  end
  local days = M.days_from_civil(y, m, d)
  -- Reject 2026-02-30 and friends: the date must survive a round trip.
  if hearth.time.format("%Y-%m-%d", days * 86400) ~= text then
    error(("%s: %s is not a real date"):format(field, text), 2)
  end
  return days
end

return M
