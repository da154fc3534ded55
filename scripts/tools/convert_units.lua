-- convert_units: converts a value between units of length, mass, volume,
-- speed and temperature. A bundled example of a plain Lua tool.

-- Each unit's size in the base unit of its kind (metre, kilogram, litre, m/s).
local factors = {
  length = { m = 1, km = 1000, cm = 0.01, mm = 0.001, mi = 1609.344, yd = 0.9144, ft = 0.3048, ["in"] = 0.0254 },
  mass = { kg = 1, g = 0.001, mg = 1e-6, t = 1000, lb = 0.45359237, oz = 0.028349523125 },
  volume = { l = 1, ml = 0.001, m3 = 1000, gal = 3.785411784, qt = 0.946352946, cup = 0.2365882365 },
  speed = { ["m/s"] = 1, ["km/h"] = 1 / 3.6, mph = 0.44704, kn = 1852 / 3600 },
}

local function kind_of(unit)
  for kind, units in pairs(factors) do
    if units[unit] then return kind end
  end
  if unit == "C" or unit == "F" or unit == "K" then return "temperature" end
  return nil
end

local function to_kelvin(value, unit)
  if unit == "C" then return value + 273.15 end
  if unit == "F" then return (value - 32) * 5 / 9 + 273.15 end
  return value
end

local function from_kelvin(value, unit)
  if unit == "C" then return value - 273.15 end
  if unit == "F" then return (value - 273.15) * 9 / 5 + 32 end
  return value
end

return {
  name = "convert_units",
  description = "Converts a value between units. Units: m km cm mm mi yd ft in, kg g mg t lb oz, l ml m3 gal qt cup, m/s km/h mph kn, C F K.",
  risk = "read",
  parameters = {
    type = "object",
    properties = {
      value = { type = "number" },
      from = { type = "string", minLength = 1 },
      to = { type = "string", minLength = 1 },
    },
    required = { "value", "from", "to" },
    additionalProperties = false,
  },
  run = function(args)
    local from_kind, to_kind = kind_of(args.from), kind_of(args.to)
    if not from_kind then error("unknown unit " .. args.from) end
    if not to_kind then error("unknown unit " .. args.to) end
    if from_kind ~= to_kind then
      error(("cannot convert %s (%s) to %s (%s)"):format(args.from, from_kind, args.to, to_kind))
    end
    local result
    if from_kind == "temperature" then
      result = from_kelvin(to_kelvin(args.value, args.from), args.to)
    else
      result = args.value * factors[from_kind][args.from] / factors[to_kind][args.to]
    end
    -- Round away float noise (0.30000000000000004) without hiding real digits.
    result = tonumber(("%.10g"):format(result))
    return { value = result, unit = args.to, kind = from_kind }
  end,
}
