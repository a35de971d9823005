// Playground: a conversation in, the extracted facts and the decisions out (a dry run), then apply.

import {api} from '../api.js';
import {append, h, scopeLabel} from '../dom.js';

const ROLE = /^(user|assistant|system)\s*:\s*(.*)$/i;

/** Lines "user: …" / "assistant: …" as messages; text without roles is one user message. */
export function parseConversation(text) {
  const messages = [];
  for (const line of text.split('\n')) {
    const match = ROLE.exec(line.trim());
    if (match) messages.push({role: match[1].toLowerCase(), content: match[2]});
    else if (line.trim() && messages.length) messages[messages.length - 1].content += `\n${line}`;
    else if (line.trim()) messages.push({role: 'user', content: line});
  }
  return messages;
}

function outcome(title, result) {
  return h('section', {class: 'outcome'}, h('h2', {}, title),
    result.results.length ? h('table', {class: 'list'},
      h('thead', {}, h('tr', {}, ['decision', 'fact', 'was'].map(c => h('th', {scope: 'col'}, c)))),
      h('tbody', {}, result.results.map(event => h('tr', {},
        h('td', {}, h('span', {class: `badge ${event.event}`}, event.event)),
        h('td', {class: 'text'}, result.applied && event.event !== 'DELETE' && event.event !== 'NONE'
          ? h('a', {href: `#/memory/${encodeURIComponent(event.id)}`}, event.memory) : event.memory),
        h('td', {class: 'text'}, event.old_memory || '')))))
      : h('p', {class: 'muted'}, 'No facts extracted.'),
    result.errors.length ? h('ul', {class: 'errors'}, result.errors.map(e => h('li', {}, `${e.stage}: ${e.message}`))) : null,
    h('p', {class: 'muted'}, `${result.usage.llm_calls} LLM calls, ${result.usage.prompt_tokens + result.usage.completion_tokens} tokens`));
}

export async function renderPlayground(ctx, root) {
  const conversation = h('textarea', {rows: 8, 'aria-label': 'Conversation',
    placeholder: 'user: I moved to Lisbon last month\nassistant: Nice! How do you like it?'});
  const fields = ['user_id', 'agent_id', 'run_id'].map(name => {
    const input = h('input', {name, value: ctx.scope?.[name] || '', size: 12});
    return [name, input, h('label', {class: 'field'}, h('span', {}, name), input)];
  });
  const infer = h('input', {type: 'checkbox', checked: true});
  const out = h('div', {'aria-live': 'polite'});
  const apply = h('button', {type: 'button', disabled: true}, 'Apply');
  let planned = null;
  const body = dryRun => ({
    messages: parseConversation(conversation.value), infer: infer.checked, dry_run: dryRun,
    ...Object.fromEntries(fields.map(([name, input]) => [name, input.value.trim() || undefined]))});
  const form = h('form', {class: 'playground'},
    h('label', {}, 'Conversation (one message a line, "user:" / "assistant:")', conversation),
    h('div', {class: 'row'}, fields.map(f => f[2]), h('label', {class: 'field'}, h('span', {}, 'infer'), infer)),
    h('div', {class: 'row'}, h('button', {type: 'submit'}, 'Dry run'), apply));
  conversation.addEventListener('input', () => { apply.disabled = true; });
  form.addEventListener('submit', async event => {
    event.preventDefault();
    if (!parseConversation(conversation.value).length) return ctx.say('Write a conversation first.', 'error');
    try {
      planned = body(true);
      const result = await api('POST', '/v1/memories/', {body: planned});
      out.replaceChildren(outcome('Dry run: nothing stored yet', result));
      apply.disabled = false;
    } catch (error) { ctx.fail(error); }
  });
  apply.addEventListener('click', async () => {
    try {
      apply.disabled = true;
      const result = await api('POST', '/v1/memories/', {body: {...planned, dry_run: false}});
      out.replaceChildren(outcome('Applied', {...result, applied: true}));
      ctx.say(`Applied: ${result.results.filter(e => e.event !== 'NONE').length} changes.`);
    } catch (error) { ctx.fail(error); }
  });
  append(root, h('h1', {tabindex: -1}, 'Playground'),
    h('p', {class: 'muted'}, `The dry run shows what the LLM extracts and decides against what ${
      ctx.scope ? scopeLabel(ctx.scope) : 'the scope'} holds; Apply runs the same add for real (a model may decide differently the second time: the applied result is shown).`),
    form, out);
  return null;
}
