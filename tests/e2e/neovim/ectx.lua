-- Ephemeral Context client for Neovim 0.7+ (vim.lsp.start_client), as in docs/editors.md.
-- The e2e test loads it with nvim_exec_lua(code, {config}); it returns the client id.
-- Notifications land in _G.ectx so the test (or a statusline) can read them.
local config = ...

_G.ectx = { usage = nil, progress = {}, asks = {} }

local handlers = {
  ['ephemeralContext/usage'] = function(_, result)
    _G.ectx.usage = result
  end,
  ['ephemeralContext/askProgress'] = function(_, result)
    table.insert(_G.ectx.progress, result)
  end,
}

local client_id = vim.lsp.start_client({
  name = 'ephemeral-context',
  cmd = config.cmd,
  root_dir = config.root,
  workspace_folders = { { uri = vim.uri_from_fname(config.root), name = 'project' } },
  init_options = config.init_options,
  handlers = handlers,
})

-- Attach every buffer of a file under the root (Neovim 0.7 has no vim.lsp.start).
vim.api.nvim_create_autocmd('BufEnter', {
  callback = function(args)
    local name = vim.api.nvim_buf_get_name(args.buf)
    if name:sub(1, #config.root) == config.root then
      vim.lsp.buf_attach_client(args.buf, client_id)
    end
  end,
})

-- :EctxAsk {prompt} -- the answer goes to _G.ectx.asks and the message area.
vim.api.nvim_create_user_command('EctxAsk', function(opts)
  local client = vim.lsp.get_client_by_id(client_id)
  client.request('ephemeralContext/ask', { prompt = opts.args }, function(err, result)
    table.insert(_G.ectx.asks, { err = err, result = result })
    if err then
      vim.notify('ectx: ' .. err.message, vim.log.levels.ERROR)
    else
      vim.notify(result.text)
    end
  end, 0)
end, { nargs = '+' })

return client_id
