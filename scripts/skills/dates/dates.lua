-- dates.days_between: whole days between two calendar dates.
-- Part of the bundled `dates` skill; shows a skill's own Lua tool, and a
-- tool that uses a library (scripts/lib/calendar.lua).

local calendar = require("calendar")

return {
  name = "days_between",
  description = "Days from one date (YYYY-MM-DD) to another, negative if earlier.",
  risk = "read",
  parameters = {
    type = "object",
    properties = { from = { type = "string" }, to = { type = "string" } },
    required = { "from", "to" },
    additionalProperties = false,
  },
  run = function(args)
    return { days = calendar.parse(args.to, "to") - calendar.parse(args.from, "from") }
  end,
}
