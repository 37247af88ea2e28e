-- Transcript buffers: one per session, filled from the store and grown live by notifications.
--
-- Following without missing or repeating an event (docs/bridge.md, "Following a session live"): the
-- buffer subscribes to its session first, then reads what is stored; it keeps the next seq it expects,
-- takes each notified event at or after it, re-reads when a notification skips past it (a dropped
-- one), once shortly after subscribing, and after the daemon reconnects.
local bridge = require("azs.bridge")
local render = require("azs.render")

local M = {}

-- bufnr -> state; "root\0session" -> bufnr
M.by_buf = {}
local by_key = {}

local SETTLE_MS = 300
local PAGE = 500

local function key(root, session)
  return root .. "\0" .. tostring(session)
end

local function valid(st)
  return st and vim.api.nvim_buf_is_valid(st.buf)
end

local function emit(st)
  for _, fn in ipairs(st.on_change) do
    pcall(fn, st)
  end
end

-- Append the events at or after st.next_seq to the buffer.
local function append(st, events)
  if not valid(st) then
    return
  end
  local lines = {}
  for _, event in ipairs(events or {}) do
    if event.seq >= st.next_seq then
      local rendered, anchor = render.event(event)
      st.seq_line[event.seq] = st.line_count + #lines + anchor
      table.insert(st.seqs, event.seq)
      vim.list_extend(lines, rendered)
      st.next_seq = event.seq + 1
    end
  end
  if #lines == 0 then
    return
  end
  local buf = st.buf
  local follow = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= math.max(st.line_count, 1) then
      table.insert(follow, win)
    end
  end
  vim.bo[buf].modifiable = true
  if st.line_count == 0 then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  else
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, lines)
  end
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  st.line_count = st.line_count + #lines
  for _, win in ipairs(follow) do
    vim.api.nvim_win_set_cursor(win, { st.line_count, 0 })
  end
  M.refresh_soon(st)
  emit(st)
end

--- Read what is stored from st.next_seq on (page by page); then call each of st.waiting.
function M.read(st)
  if st.reading then
    st.read_again = true
    return
  end
  st.reading = true
  local function page(from)
    bridge.request(
      { op = "getevents", root = st.root, session = st.session, from_seq = from, limit = PAGE },
      function(err, result)
        if err then
          st.reading = false
          st.error = err.message
          vim.notify("azs: S" .. st.session .. ": " .. err.message, vim.log.levels.WARN)
          return
        end
        append(st, result.events)
        if result.next_seq ~= nil then
          return page(math.max(result.next_seq, st.next_seq))
        end
        st.reading = false
        st.loaded = true
        st.reads = st.reads + 1
        if st.read_again then
          st.read_again = false
          return M.read(st)
        end
        local waiting = st.waiting
        st.waiting = {}
        for _, fn in ipairs(waiting) do
          pcall(fn, st)
        end
        emit(st)
      end
    )
  end
  page(st.next_seq)
end

--- The session's view and context meter, fetched again a little later (once for a burst of events).
function M.refresh_soon(st)
  if st.refresh_pending then
    return
  end
  st.refresh_pending = true
  vim.defer_fn(function()
    st.refresh_pending = false
    M.refresh(st)
  end, 200)
end

function M.refresh(st)
  bridge.request({ op = "getsession", root = st.root, session = st.session }, function(err, result)
    if not err and valid(st) then
      st.view = result.session
      emit(st)
    end
  end)
  bridge.request({ op = "contextmeter", root = st.root, session = st.session }, function(err, result)
    if not err and valid(st) then
      st.meter = result
      emit(st)
    end
  end)
end

local function on_notify(note)
  if note.op == "eventsappended" then
    local st = M.by_buf[by_key[key(note.root, note.session_id)]]
    if not valid(st) then
      return
    end
    local first = note.events and note.events[1]
    if first and first.seq > st.next_seq then
      M.read(st) -- a notification was dropped: read what is stored
    else
      append(st, note.events)
    end
  elseif note.op == "sessionchanged" then
    local st = M.by_buf[by_key[key(note.root, note.session_id)]]
    if not valid(st) then
      return
    end
    if note.session ~= nil then
      st.view = note.session
    end
    if note.change == "deleted" then
      st.deleted = true
      vim.bo[st.buf].modifiable = true
      vim.api.nvim_buf_set_lines(st.buf, -1, -1, false, { "", "· this session was deleted" })
      vim.bo[st.buf].modifiable = false
      vim.bo[st.buf].modified = false
    end
    emit(st)
  elseif note.op == "reconnected" then
    for _, st in pairs(M.by_buf) do
      if valid(st) then
        M.read(st)
      end
    end
  end
end

local listener = nil

--- The transcript of a session: its buffer (made and filled on first use). `view` may be a session
--- view table or nil (it is fetched). opts.on_loaded(st) is called once what is stored is shown.
function M.open(root, session, view, opts)
  opts = opts or {}
  if listener == nil then
    listener = bridge.on(on_notify)
  end
  local existing = M.by_buf[by_key[key(root, session)]]
  if valid(existing) then
    if opts.on_loaded then
      if existing.loaded and not existing.reading then
        vim.schedule(function()
          opts.on_loaded(existing) -- never before open() has returned
        end)
      else
        table.insert(existing.waiting, opts.on_loaded)
      end
    end
    return existing
  end
  local buf = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(buf, "azs://" .. root .. "/S" .. session)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "azs"
  local st = {
    buf = buf,
    root = root,
    session = session,
    view = view,
    next_seq = 1,
    line_count = 0,
    seq_line = {},
    seqs = {},
    waiting = { opts.on_loaded },
    on_change = {},
    loaded = false,
    reads = 0, -- complete reads of what is stored (the first, the settle re-read, after gaps)
  }
  M.by_buf[buf] = st
  by_key[key(root, session)] = buf
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      M.by_buf[buf] = nil
      by_key[key(root, session)] = nil
      bridge.request({ op = "unsubscribe", root = root, session = session }, function() end)
    end,
  })
  bridge.request({ op = "subscribe", root = root, session = session }, function(err)
    if err then
      vim.notify("azs: " .. err.message, vim.log.levels.ERROR)
      return
    end
    M.read(st)
    vim.defer_fn(function()
      if valid(st) then
        M.read(st) -- the subscription has reached the daemon by now: catch what came before it
      end
    end, SETTLE_MS)
  end)
  M.refresh(st)
  return st
end

--- The seq of the event shown at line `lnum` of a transcript (the last one starting at or before it).
function M.seq_at(st, lnum)
  local found = nil
  for _, seq in ipairs(st.seqs) do
    if st.seq_line[seq] <= lnum then
      found = seq
    else
      break
    end
  end
  return found
end

return M
