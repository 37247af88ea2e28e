-- The connection to `azs bridge`: one job speaking JSON lines (docs/bridge.md).
--
-- request(msg, cb) sends one request and calls cb(err, result) with its reply; on(fn) registers a
-- listener for notifications ({op = ...} tables). The job starts on the first request and is started
-- again by the next request if it ever exits.
local M = {}

M.config = {
  -- The `azs` command line (a list); `bridge` and its options are appended.
  cmd = { "azs" },
  -- Extra arguments after `bridge` (for example { "--heartbeat", "1" }).
  bridge_args = {},
}

local job = nil
local next_id = 0
local pending = {}
local listeners = {}
local partial = ""
local stderr_tail = {}

local function dispatch(line)
  if line == "" then
    return
  end
  local ok, msg = pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
  if not ok or type(msg) ~= "table" then
    vim.notify("azs: the bridge wrote a line that is not JSON: " .. line, vim.log.levels.WARN)
    return
  end
  if msg.notify ~= nil then
    for _, fn in pairs(listeners) do
      local fine, err = pcall(fn, msg.notify)
      if not fine then
        vim.notify("azs: " .. tostring(err), vim.log.levels.ERROR)
      end
    end
    return
  end
  local cb = msg.id ~= nil and pending[msg.id] or nil
  if cb == nil then
    if msg.error then
      vim.notify("azs: " .. msg.error.message, vim.log.levels.WARN)
    end
    return
  end
  pending[msg.id] = nil
  local fine, err = pcall(cb, msg.error, msg.result)
  if not fine then
    vim.notify("azs: " .. tostring(err), vim.log.levels.ERROR)
  end
end

local function on_stdout(_, data)
  -- data is a list of lines split at "\n": the first continues the last partial line, the last one is
  -- the start of the next (or "" after a newline).
  if data == nil then
    return
  end
  for i, chunk in ipairs(data) do
    if i == #data then
      partial = partial .. chunk
    else
      dispatch(partial .. chunk)
      partial = ""
    end
  end
end

local function on_stderr(_, data)
  for _, line in ipairs(data or {}) do
    if line ~= "" then
      table.insert(stderr_tail, line)
      if #stderr_tail > 20 then
        table.remove(stderr_tail, 1)
      end
    end
  end
end

local function on_exit(_, code)
  job = nil
  partial = ""
  local failed = pending
  pending = {}
  local why = table.concat(stderr_tail, "\n")
  for _, cb in pairs(failed) do
    cb({ code = "bridge_exited", message = "azs bridge exited with status " .. code .. ": " .. why }, nil)
  end
  for _, fn in pairs(listeners) do
    pcall(fn, { op = "bridge_exited", code = code, reason = why })
  end
end

--- Start the bridge if it is not running. Returns true when it runs.
function M.start()
  if job ~= nil then
    return true
  end
  local cmd = vim.list_extend(vim.deepcopy(M.config.cmd), { "bridge" })
  vim.list_extend(cmd, M.config.bridge_args)
  stderr_tail = {}
  local ok, id = pcall(vim.fn.jobstart, cmd, {
    on_stdout = on_stdout,
    on_stderr = on_stderr,
    on_exit = on_exit,
  })
  if not ok or id <= 0 then
    vim.notify("azs: cannot start `" .. table.concat(cmd, " ") .. "`: " .. tostring(id), vim.log.levels.ERROR)
    return false
  end
  job = id
  return true
end

--- Send one request (a table with `op` and the message's fields); cb(err, result) gets its reply.
function M.request(msg, cb)
  cb = cb or function(err)
    if err then
      vim.notify("azs: " .. err.message, vim.log.levels.ERROR)
    end
  end
  if not M.start() then
    cb({ code = "bridge_exited", message = "azs bridge is not running" }, nil)
    return
  end
  next_id = next_id + 1
  local line = vim.deepcopy(msg)
  line.id = next_id
  pending[next_id] = cb
  vim.fn.chansend(job, vim.json.encode(line) .. "\n")
end

--- Call fn(note) for every notification; returns a handle for off().
function M.on(fn)
  local handle = {}
  listeners[handle] = fn
  return handle
end

function M.off(handle)
  listeners[handle] = nil
end

--- Stop the bridge (it answers what is in flight first: its stdin is closed).
function M.stop()
  if job ~= nil then
    vim.fn.chanclose(job, "stdin")
  end
end

function M.running()
  return job ~= nil
end

return M
