-- azs.nvim commands (Neovim 0.7+). Configure with require("azs").setup({...}); see client/nvim/README.md.
if vim.g.loaded_azs then
  return
end
vim.g.loaded_azs = true

local function azs()
  return require("azs")
end

local command = vim.api.nvim_create_user_command

command("Azs", function(o)
  azs().pick(o.args ~= "" and o.args or nil)
end, { nargs = "?", desc = "open a session's live transcript" })
command("AzsSearch", function(o)
  azs().search(o.args, { fts = o.bang })
end, { nargs = "+", bang = true, desc = "search as typed (main.go, unwrap()); ! for FTS5 syntax" })
command("AzsRun", function(o)
  azs().run(o.args)
end, { nargs = "+", desc = "run an agent turn in the current session" })
command("AzsNew", function(o)
  azs().new(o.args)
end, { nargs = "?", desc = "create a session" })
command("AzsRename", function(o)
  azs().rename(o.args)
end, { nargs = "+", desc = "rename the current session" })
command("AzsFork", function(o)
  azs().fork(o.args ~= "" and o.args or nil)
end, { nargs = "?", desc = "fork the current session at the event under the cursor" })

vim.api.nvim_create_autocmd("VimLeavePre", {
  callback = function()
    if package.loaded["azs.bridge"] then
      require("azs.bridge").stop()
    end
  end,
})
