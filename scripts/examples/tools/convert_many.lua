-- convert_many: converts a list of values at once by calling convert_units
-- through hearth.tool. A bundled example of a tool that calls another tool
-- (through the same registry, validation and policy as the agent).

return {
  name = "convert_many",
  description = "Converts several values from one unit to another, e.g. a list of distances from mi to km.",
  risk = "read",
  parameters = {
    type = "object",
    properties = {
      values = { type = "array", items = { type = "number" }, minItems = 1, maxItems = 100 },
      from = { type = "string" },
      to = { type = "string" },
    },
    required = { "values", "from", "to" },
    additionalProperties = false,
  },
  run = function(args)
    local out = hearth.json.array()
    for i, value in ipairs(args.values) do
      local converted = hearth.tool("convert_units", { value = value, from = args.from, to = args.to })
      out[i] = converted.value
    end
    return { values = out, unit = args.to }
  end,
}
