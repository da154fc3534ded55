-- notes: a small persistent notebook on hearth.kv. A bundled example of a
-- tool that keeps state between calls (and between restarts).

local function load_notes()
  return hearth.kv.get("notes") or hearth.json.array()
end

return {
  name = "notes",
  description = "Keeps short notes that persist: action add (with text), list, or remove (with the note's id).",
  risk = "write",
  parameters = {
    type = "object",
    properties = {
      action = { enum = { "add", "list", "remove" } },
      text = { type = "string", minLength = 1, maxLength = 2000 },
      id = { type = "integer", minimum = 1 },
    },
    required = { "action" },
    additionalProperties = false,
  },
  run = function(args)
    local notes = load_notes()
    if args.action == "list" then
      return { notes = notes }
    elseif args.action == "add" then
      if not args.text then error("add needs `text`") end
      local next_id = (hearth.kv.get("next_id") or 1)
      notes[#notes + 1] = { id = next_id, text = args.text, at = hearth.time.iso() }
      hearth.kv.set("notes", notes)
      hearth.kv.set("next_id", next_id + 1)
      return { added = next_id, count = #notes }
    else
      if not args.id then error("remove needs `id`") end
      local kept = hearth.json.array()
      for _, note in ipairs(notes) do
        if note.id ~= args.id then kept[#kept + 1] = note end
      end
      if #kept == #notes then error("no note with id " .. args.id) end
      hearth.kv.set("notes", kept)
      return { removed = args.id, count = #kept }
    end
  end,
}
