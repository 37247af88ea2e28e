-- azs.nvim: AZUREAL sessions in Neovim, through `azs bridge` (docs/bridge.md).
--
--   :Azs [S3]            pick a session of this worktree and open its live transcript
--   :AzsSearch {query}   full-text search into the quickfix list (each hit opens at its event)
--   :AzsRun {prompt}     run an agent turn in the current session, in a terminal split
--   :AzsNew [name]       create a session and open it
--   :AzsRename {name}    rename the current session
--   :AzsFork [seq]       fork the current session at seq (default: the event under the cursor)
--   require("azs").statusline()   the current session's badge and context meter
local bridge = require("azs.bridge")
local render = require("azs.render")
local transcript = require("azs.transcript")

local M = {}

M.config = {
  -- The `azs` command line; `bridge` or `run ...` is appended.
  cmd = { "azs" },
  -- Extra arguments of `azs bridge`.
  bridge_args = {},
  -- The worktree root (default: the git top level of the current directory, else the directory).
  root = nil,
  -- The sessions :Azs and :AzsSearch cover: "branch" (this branch's and unlabelled ones, as `azs ls`)
  -- or "all".
  worktrees = "branch",
  -- Backend of :AzsRun ("claude" or "codex"), and where its terminal opens.
  backend = "claude",
  split = "botright 15split",
}

-- The session :AzsRun, :AzsRename, :AzsFork and the statusline are about, when the current buffer
-- is no transcript: the last transcript entered.
local current = nil

function M.setup(opts)
  opts = opts or {}
  M.config = vim.tbl_deep_extend("force", M.config, opts)
  -- lists are replaced, not merged index by index
  M.config.cmd = opts.cmd or M.config.cmd
  M.config.bridge_args = opts.bridge_args or M.config.bridge_args
  bridge.config.cmd = M.config.cmd
  bridge.config.bridge_args = M.config.bridge_args
end

local function err(message)
  vim.notify("azs: " .. message, vim.log.levels.ERROR)
end

local function git(args, cwd)
  local cmd = { "git", "-C", cwd }
  vim.list_extend(cmd, args)
  local out = vim.fn.systemlist(cmd)
  if vim.v.shell_error ~= 0 or out[1] == nil then
    return nil
  end
  return out[1]
end

--- The worktree root: the configured one, else the git top level of the current directory.
function M.root()
  local dir = M.config.root or git({ "rev-parse", "--show-toplevel" }, vim.fn.getcwd()) or vim.fn.getcwd()
  return vim.loop.fs_realpath(dir) or dir
end

--- The branch checked out at the root ("" outside git): sessions are labelled with it.
function M.branch(root)
  local branch = git({ "rev-parse", "--abbrev-ref", "HEAD" }, root or M.root())
  return (branch == nil or branch == "HEAD") and "" or branch
end

local function covered(view, branch)
  return M.config.worktrees == "all" or view.worktree == "" or view.worktree == branch
end

--- The transcript state of a buffer (default: the current one), else of the last one entered.
function M.current(buf)
  local st = transcript.by_buf[buf or vim.api.nvim_get_current_buf()]
  if st then
    return st
  end
  if current and vim.api.nvim_buf_is_valid(current.buf) then
    return current
  end
  return nil
end

local function redraw()
  vim.cmd("redrawstatus!")
end

local function show(st, opts)
  opts = opts or {}
  if st.on_change[1] == nil then
    table.insert(st.on_change, function()
      vim.schedule(redraw)
    end)
  end
  current = st
  if opts.show ~= false then
    vim.api.nvim_set_current_buf(st.buf)
  end
  return st
end

--- Open a session's transcript in the current window. opts.on_loaded(st): once what is stored shows.
function M.open(session, view, opts)
  opts = opts or {}
  local st = transcript.open(M.root(), session, view, { on_loaded = opts.on_loaded })
  return show(st, opts)
end

--- :Azs — pick a session (vim.ui.select) of this worktree and open it; :Azs S3 opens S3.
function M.pick(arg, opts)
  local given = arg and tonumber((tostring(arg):gsub("^[Ss]", "")))
  if given then
    return M.open(given, nil, opts)
  end
  local root = M.root()
  local branch = M.branch(root)
  bridge.request({ op = "listsessions", root = root, limit = 500 }, function(e, result)
    if e then
      return err(e.message)
    end
    local sessions = vim.tbl_filter(function(s)
      return covered(s, branch)
    end, result.sessions)
    if #sessions == 0 then
      return vim.notify("azs: no sessions in " .. root .. " yet (:AzsNew makes one)")
    end
    vim.ui.select(sessions, {
      prompt = "azs session",
      format_item = function(s)
        return string.format("S%d %s %s", s.id, render.badge(s.state), s.display_name)
      end,
    }, function(choice)
      if choice then
        M.open(choice.id, choice, opts)
      end
    end)
  end)
end

--- :AzsSearch — hits into the quickfix list, each at its event's line in its session's transcript.
function M.search(query, opts)
  opts = opts or {}
  local root = M.root()
  local branch = M.branch(root)
  -- plain text as people type it (main.go, unwrap()); opts.fts: SQLite FTS5 syntax
  local msg = { op = "search", root = root, query = query, limit = 100, words = not opts.fts }
  if M.config.worktrees ~= "all" then
    msg.worktrees = branch ~= "" and { branch, "" } or { "" }
  end
  bridge.request(msg, function(e, result)
    if e then
      return err("search: " .. e.message)
    end
    local hits = result.hits
    local states, missing = {}, 0
    local function fill()
      local items = {}
      for _, hit in ipairs(hits) do
        local st = states[hit.session]
        table.insert(items, {
          bufnr = st.buf,
          lnum = st.seq_line[hit.seq] or 1,
          text = string.format("S%d seq %d: %s", hit.session, hit.seq, hit.snippet),
        })
      end
      vim.fn.setqflist({}, " ", { title = "azs search: " .. query, items = items })
      if opts.open ~= false then
        vim.cmd("botright copen")
      end
      if opts.on_done then
        opts.on_done(items)
      end
    end
    for _, hit in ipairs(hits) do
      if states[hit.session] == nil then
        missing = missing + 1
        states[hit.session] = transcript.open(root, hit.session, nil, {
          on_loaded = function()
            missing = missing - 1
            if missing == 0 then
              fill()
            end
          end,
        })
      end
    end
    if missing == 0 then
      fill()
    end
  end)
end

local function need_session()
  local st = M.current()
  if st == nil then
    err("no current session: open one with :Azs or make one with :AzsNew")
  end
  return st
end

--- :AzsNew — create a session labelled with this branch and open it.
function M.new(name, opts)
  local root = M.root()
  local msg = { op = "createsession", root = root, worktree = M.branch(root) }
  if name and name ~= "" then
    msg.name = name
  end
  bridge.request(msg, function(e, result)
    if e then
      return err(e.message)
    end
    M.open(result.session.id, result.session, opts)
  end)
end

--- :AzsRename — rename the current session.
function M.rename(name, opts)
  local st = need_session()
  if st == nil then
    return
  end
  bridge.request({ op = "renamesession", root = st.root, session = st.session, name = name }, function(e, result)
    if e then
      return err(e.message)
    end
    st.view = result.session
    redraw()
    if opts and opts.on_done then
      opts.on_done(st)
    end
  end)
end

--- :AzsFork — a new session with the current one's events up to `seq` (default: under the cursor).
function M.fork(seq, opts)
  local st = need_session()
  if st == nil then
    return
  end
  local at = tonumber(seq)
  if at == nil and st.buf == vim.api.nvim_get_current_buf() then
    at = transcript.seq_at(st, vim.api.nvim_win_get_cursor(0)[1])
  end
  at = at or (st.next_seq - 1)
  if at < 1 then
    return err("S" .. st.session .. " has no events to fork from")
  end
  bridge.request({ op = "forksession", root = st.root, session = st.session, at_seq = at }, function(e, result)
    if e then
      return err(e.message)
    end
    M.open(result.session.id, result.session, opts)
  end)
end

--- :AzsRun — `azs run -s S<current> PROMPT` in a terminal split; the transcript grows as it runs.
function M.run(prompt, opts)
  opts = opts or {}
  local st = need_session()
  if st == nil then
    return
  end
  local cmd = vim.deepcopy(M.config.cmd)
  vim.list_extend(cmd, { "--root", st.root, "run", "-s", "S" .. st.session, "--backend", M.config.backend })
  table.insert(cmd, prompt)
  vim.cmd(M.config.split)
  vim.cmd("enew")
  local term_buf = vim.api.nvim_get_current_buf()
  local job = vim.fn.termopen(cmd, {
    cwd = st.root,
    on_exit = function(_, code)
      if vim.api.nvim_buf_is_valid(term_buf) then
        vim.b[term_buf].azs_exit = code -- for whoever wants to know how the turn ended
      end
      transcript.refresh(st)
      if opts.on_exit then
        opts.on_exit(code, term_buf)
      end
    end,
  })
  if job <= 0 then
    err("cannot start " .. table.concat(cmd, " "))
  end
  return term_buf
end

--- The current session's badge, name and context meter, e.g. "S3 ✓ fix parser · ctx 12%" ("" without one).
function M.statusline()
  local st = M.current()
  if st == nil then
    return ""
  end
  local view = st.view
  local parts = { "S" .. st.session }
  if view then
    table.insert(parts, render.badge(view.state))
    table.insert(parts, view.display_name)
  end
  local line = table.concat(parts, " ")
  if st.meter then
    line = line .. string.format(" · ctx %d%%", math.floor(st.meter.percent + 0.5))
  end
  return line
end

vim.api.nvim_create_autocmd("BufEnter", {
  group = vim.api.nvim_create_augroup("azs", { clear = true }),
  pattern = "azs://*",
  callback = function(ev)
    local st = transcript.by_buf[ev.buf]
    if st then
      show(st, { show = false })
    end
  end,
})

M.bridge = bridge
M.transcript = transcript

return M
