-- Events as lines of a transcript buffer: pure functions of the event's JSON value (docs/bridge.md).
local M = {}

local RESULT_LINES = 3

local function split(text)
  return vim.split(tostring(text or ""), "\n", { plain = true })
end

local function one_line(text, max)
  text = tostring(text or ""):gsub("%s+", " ")
  if #text > max then
    text = text:sub(1, max - 1) .. "…"
  end
  return text
end

local function indented(text, first, rest)
  local out = {}
  for i, line in ipairs(split((tostring(text or ""):gsub("%s+$", "")))) do
    table.insert(out, (i == 1 and first or rest) .. line)
  end
  return out
end

-- The parameter that says what a tool call does.
local KEYS = { "command", "file_path", "path", "pattern", "url", "query", "description", "prompt" }

local function key_param(call)
  local input = type(call.input) == "table" and call.input or {}
  for _, key in ipairs(KEYS) do
    if type(input[key]) == "string" and input[key] ~= "" then
      return input[key]
    end
  end
  return call.file_path or ""
end

local function seconds(ms)
  return string.format("%.1fs", (ms or 0) / 1000)
end

local RENDER = {
  UserMessage = function(e)
    local out = { "" }
    vim.list_extend(out, indented(e.content, "» ", "  "))
    return out
  end,
  AssistantText = function(e)
    return indented(e.text, "  ", "  ")
  end,
  ToolCall = function(e)
    local param = one_line(key_param(e), 120)
    return { "  ⚙ " .. (e.tool_name or "?") .. (param ~= "" and (" " .. param) or "") }
  end,
  ToolResult = function(e)
    local lines = split((tostring(e.content or ""):gsub("%s+$", "")))
    local mark = e.is_error and "    ✗ " or "    ↳ "
    local out = {}
    for i = 1, math.min(#lines, RESULT_LINES) do
      table.insert(out, (i == 1 and mark or "      ") .. one_line(lines[i], 200))
    end
    if #lines > RESULT_LINES then
      table.insert(out, "      … (+" .. (#lines - RESULT_LINES) .. " more lines)")
    end
    if #out == 0 then
      out = { mark .. "(no output)" }
    end
    return out
  end,
  Complete = function(e)
    local cost = e.cost_usd and e.cost_usd > 0 and string.format(" $%.4f", e.cost_usd) or ""
    if e.success then
      return { "✓ turn done in " .. seconds(e.duration_ms) .. cost }
    end
    return { "✗ turn failed after " .. seconds(e.duration_ms) .. cost }
  end,
  Plan = function(e)
    local out = { "  ▸ plan " .. (e.name or "") }
    vim.list_extend(out, indented(e.content, "    ", "    "))
    return out
  end,
  Init = function(e)
    return { "· " .. (e.model or "?") .. " in " .. (e.cwd or "?") }
  end,
  ModelSwitch = function(e)
    return { "· model " .. (e.model or "?") }
  end,
  Hook = function(e)
    return { "· hook " .. (e.name or "") }
  end,
  Command = function(e)
    return { "· /" .. (e.name or "") }
  end,
}

--- The lines of one wire event ({seq, kind, data}); the index of the line that stands for it.
function M.event(event)
  local data = event.data
  local kind, fields = event.kind, {}
  if type(data) == "table" then
    for name, value in pairs(data) do
      kind, fields = name, type(value) == "table" and value or {}
    end
  elseif type(data) == "string" then
    kind = data
  end
  local render = RENDER[kind]
  local lines = render and render(fields) or { "· " .. tostring(kind) }
  local anchor = 1
  while lines[anchor] == "" and anchor < #lines do
    anchor = anchor + 1
  end
  return lines, anchor
end

M.BADGES = { succeeded = "✓", failed = "✗", running = "●", ended = "○", new = "new" }

--- A session's badge (as `azs ls` shows it).
function M.badge(state)
  return M.BADGES[state] or "?"
end

return M
