-- End-to-end run of the plugin in a real headless Neovim, against a real daemon through `azs bridge`.
-- Driven by tests/test_nvim.py, which starts the daemon, prepares the store and reads what this script
-- writes to $AZS_TEST_OUT (JSON): buffer lines, quickfix items, the statusline. Each step waits for
-- its effect with vim.wait; a step that times out records its name in "failed" and ends the run.
local env = vim.env
local out = { notes = {} }
local WAIT_MS = 8000

local function finish(code)
  local f = assert(io.open(env.AZS_TEST_OUT, "w"))
  f:write(vim.json.encode(out))
  f:close()
  vim.cmd((code == 0) and "qall!" or "cquit " .. code)
end

local function wait(what, cond)
  if not vim.wait(WAIT_MS, cond, 20) then
    out.failed = what
    finish(1)
    error("stopped: " .. what) -- not reached: cquit ends Neovim
  end
end

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

local function has_line(buf, text)
  for _, line in ipairs(lines(buf)) do
    if line:find(text, 1, true) then
      return true
    end
  end
  return false
end

local notify = vim.notify
vim.notify = function(msg, level)
  table.insert(out.notes, msg)
  return notify(msg, level)
end

local ok, err = pcall(function()
  local azs = require("azs")
  azs.setup({ cmd = vim.json.decode(env.AZS_TEST_CMD), bridge_args = { "--heartbeat", "0.5" }, root = env.AZS_TEST_ROOT })

  -- :Azs picks the session through vim.ui.select, and its transcript shows what is stored
  local offered = nil
  vim.ui.select = function(items, opts, on_choice)
    offered = vim.tbl_map(opts.format_item, items)
    for _, item in ipairs(items) do
      if item.name == env.AZS_TEST_SESSION then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  vim.cmd("Azs")
  wait(":Azs offered sessions", function()
    return offered ~= nil
  end)
  out.offered = offered
  local buf = vim.api.nvim_get_current_buf()
  wait("the stored events shown", function()
    return has_line(buf, "hello from python")
  end)
  out.bufname = vim.api.nvim_buf_get_name(buf)
  out.before = lines(buf)

  -- another process appends: the transcript grows live, by notification (the settle re-read is done)
  wait("the settle re-read", function()
    return azs.current().reads >= 2
  end)
  local appended = vim.fn.system(vim.json.decode(env.AZS_TEST_APPEND))
  out.append_output = appended
  wait("the appended events shown", function()
    return has_line(buf, "appended live")
  end)
  out.after = lines(buf)

  -- the statusline: badge, name, context meter
  wait("the statusline's meter", function()
    return azs.statusline():find("ctx", 1, true) ~= nil
  end)
  out.statusline = azs.statusline()

  -- :AzsSearch fills the quickfix list; the first hit opens at its event
  vim.cmd("AzsSearch needl") -- plain text, as typed: a word from its start (issue 25)
  wait("the quickfix list", function()
    return #vim.fn.getqflist() > 0
  end)
  out.quickfix = {}
  for _, item in ipairs(vim.fn.getqflist()) do
    table.insert(out.quickfix, {
      text = item.text,
      bufname = vim.api.nvim_buf_get_name(item.bufnr),
      lnum = item.lnum,
      line = vim.api.nvim_buf_get_lines(item.bufnr, item.lnum - 1, item.lnum, false)[1],
    })
  end
  vim.cmd("cfirst")
  out.jump = { bufname = vim.api.nvim_buf_get_name(0), line = vim.api.nvim_get_current_line() }

  -- :AzsRename, :AzsFork (at the event under the cursor), :AzsNew
  vim.cmd("AzsRename renamed in nvim")
  wait("the rename", function()
    return azs.statusline():find("renamed in nvim", 1, true) ~= nil
  end)
  out.renamed = azs.statusline()
  vim.cmd("AzsFork")
  wait("the fork", function()
    local st = azs.current()
    return st ~= nil and st.buf ~= buf and st.loaded
  end)
  out.fork = { bufname = vim.api.nvim_buf_get_name(0), lines = lines(0) }
  vim.cmd("AzsNew made in nvim")
  wait("the new session", function()
    local st = azs.current()
    return st ~= nil and st.view ~= nil and st.view.name == "made in nvim" and st.loaded
  end)
  out.new = { bufname = vim.api.nvim_buf_get_name(0), statusline = azs.statusline() }

  -- :AzsRun runs a turn (the fake agent) in a terminal split; the transcript grows with it
  local run_buf = azs.current().buf
  vim.cmd("AzsRun say something")
  local term_buf = vim.api.nvim_get_current_buf()
  local exit_code = nil
  out.terminal = vim.bo.buftype
  wait("the turn's events in the transcript", function()
    exit_code = vim.b[term_buf].azs_exit
    return has_line(run_buf, "the fake agent answers") and exit_code ~= nil
  end)
  out.run = { exit = exit_code, lines = lines(run_buf) }
  wait("the badge after the turn", function()
    return azs.statusline():find("✓", 1, true) ~= nil
  end)
  out.run.statusline = azs.statusline()
end)

if not ok then
  out.error = tostring(err)
  finish(1)
end
finish(0)
