// The original client's calls, as it makes them (see index.html). Each outcome is
// written into the page, and each network call into #log, for the test to read.

const API = new URLSearchParams(location.search).get('api');
const $ = (id) => document.getElementById(id);

let conversationId = newConversationId();
let fileId = null;

function newConversationId() {
  return `conv_${Date.now()}_${Math.random().toString(36).slice(2, 8)}`;
}

function log(text) {
  const item = document.createElement('li');
  item.textContent = text;
  $('log').append(item);
}

function parseList(value) {
  if (Array.isArray(value)) return value;
  try {
    return JSON.parse(value || '[]');
  } catch {
    return [];
  }
}

function resetConversationView() {
  for (const id of ['thinking', 'tools', 'answer', 'references', 'recommend', 'errors', 'status']) {
    $(id).replaceChildren();
  }
}

function handleEvent(data) {
  switch (data.type) {
    case 'thinking':
      $('thinking').textContent += data.content;
      break;
    case 'text':
      $('answer').textContent += data.content;
      break;
    case 'tool_start': {
      const item = document.createElement('li');
      item.dataset.callId = data.toolCallId;
      item.textContent = `${data.toolName}: running`;
      $('tools').append(item);
      break;
    }
    case 'tool_end': {
      const item = $('tools').querySelector(`[data-call-id="${data.toolCallId}"]`);
      item.textContent = `${data.toolName}: ${data.isError ? 'failed' : 'done'}`;
      break;
    }
    case 'reference':
      for (const ref of parseList(data.content)) {
        const item = document.createElement('li');
        const link = document.createElement('a');
        link.href = ref.url;
        link.textContent = ref.title;
        item.append(link);
        $('references').append(item);
      }
      break;
    case 'recommend':
      for (const question of parseList(data.content)) {
        const button = document.createElement('button');
        button.className = 'recommend';
        button.textContent = question;
        button.addEventListener('click', () => sendMessage(question));
        $('recommend').append(button);
      }
      break;
    case 'error':
      $('errors').textContent += data.content;
      break;
    case 'complete':
      $('status').textContent = data.status;
      break;
    default:
      break;
  }
}

async function sendMessage(query) {
  resetConversationView();
  const params = new URLSearchParams({ query, conversationId });
  if (fileId) params.set('fileId', fileId);
  const url = `${API}/agent/${$('agent').value}/stream?${params}`;
  let response;
  try {
    response = await fetch(url, { headers: { 'Cache-Control': 'no-cache' } });
  } catch (error) {
    log(`stream: network error`);
    return;
  }
  log(`stream: ${response.status}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    const lines = buffer.split('\n');
    buffer = lines.pop();
    for (const line of lines) {
      if (!line.startsWith('data:')) continue;
      const payload = line.slice(5).trim();
      if (!payload) continue;
      try {
        handleEvent(JSON.parse(payload));
      } catch (error) {
        log(`bad frame: ${payload}`);
      }
    }
  }
  log('stream: closed');
}

async function stop() {
  try {
    const response = await fetch(`${API}/agent/stop?conversationId=${conversationId}`);
    const result = await response.json();
    log(`stop: ${result.success}`);
  } catch (error) {
    log('stop: network error');
  }
}

async function loadHistory() {
  let body;
  try {
    const response = await fetch(`${API}/session/list?pageNum=1&pageSize=20`);
    body = await response.json();
  } catch (error) {
    log('history: network error');
    return;
  }
  log(`history: ${body.code}`);
  $('records').replaceChildren();
  for (const record of body.data.records) {
    const item = document.createElement('li');
    item.dataset.conversationId = record.conversationId;
    const open = document.createElement('button');
    open.className = 'open';
    open.textContent = `${record.question} (${record.agentType}, file: ${record.fileid ?? 'none'})`;
    open.addEventListener('click', () => loadSession(record.conversationId));
    const remove = document.createElement('button');
    remove.className = 'delete';
    remove.textContent = 'Delete';
    remove.addEventListener('click', () => deleteSession(record.conversationId));
    item.append(open, remove);
    $('records').append(item);
  }
}

async function loadSession(id) {
  const response = await fetch(`${API}/session/${id}`);
  const body = await response.json();
  log(`session: ${body.code}`);
  conversationId = id;
  $('session').replaceChildren();
  for (const message of body.data.messages) {
    const item = document.createElement('article');
    item.className = 'message';
    item.dataset.id = message.id;
    const refs = parseList(message.reference).map((ref) => ref.url).join(' ');
    item.textContent = `${message.question} => ${message.answer} | thinking: ${message.thinking} | refs: ${refs} | at ${message.createTime}`;
    $('session').append(item);
  }
}

async function deleteSession(id) {
  const response = await fetch(`${API}/session/${id}`, { method: 'DELETE' });
  let body = null;
  try {
    body = await response.json();
  } catch (error) {
    body = null;
  }
  // The original client reads the JSON body: an empty 204 shows as a failure.
  log(body && body.code === 200 ? 'delete: ok' : 'delete: failed');
  await loadHistory();
}

async function upload(file) {
  const form = new FormData();
  form.append('file', file);
  try {
    const response = await fetch(`${API}/file/upload`, { method: 'POST', body: form });
    const body = await response.json();
    log(`upload: ${body.code}`);
    if (body.code === 200) fileId = body.data.fileId;
  } catch (error) {
    log('upload: network error');
  }
}

async function listFiles() {
  try {
    const response = await fetch(`${API}/file/list`);
    const body = await response.json();
    log(`files: ${body.code}`);
  } catch (error) {
    log('files: network error');
  }
}

$('send').addEventListener('click', () => sendMessage($('question').value));
$('stop').addEventListener('click', stop);
$('new').addEventListener('click', () => {
  conversationId = newConversationId();
  resetConversationView();
});
$('history').addEventListener('click', loadHistory);
$('files').addEventListener('click', listFiles);
$('upload').addEventListener('change', () => upload($('upload').files[0]));
