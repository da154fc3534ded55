-- dates.shift: a date plus (or minus) a number of days, with its weekday.
-- Part of the bundled `dates` skill.

local calendar = require("calendar")

return {
  name = "shift",
  description = "The date (YYYY-MM-DD) N days after another, with its weekday.",
  risk = "read",
  parameters = {
    type = "object",
    properties = {
      date = { type = "string" },
      days = { type = "integer", minimum = -1000000, maximum = 1000000 },
    },
    required = { "date", "days" },
    additionalProperties = false,
  },
  run = function(args)
    local start = calendar.parse(args.date, "date")
    local t = (start + args.days) * 86400
    return { date = hearth.time.format("%Y-%m-%d", t), weekday = hearth.time.format("%A", t) }
  end,
}
