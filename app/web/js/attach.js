// The file a question goes with: picked with the Attach button, dropped on the page or
// pasted, then uploaded and read before it counts, so a file the agent cannot read is
// refused at once rather than by the answer. A question sent while the file is still on
// its way waits for it (`ready()`): the chip already shows the file, so the reader has
// attached it.
//
// Most agents read the file (the stream's `fileId`). The PowerPoint agent takes one too,
// but as the template its deck is built on (`templateFileId`, API.md "PPT template
// upload"): only a .pptx, and the page says so on its button. `/agent/kinds` names no
// template, so which agents take one is known here.

import { ApiError, getJson } from './api.js';

const PPTX = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';
/** Agents whose file is a template, not something to read: the button that attaches it. */
const TEMPLATES = {
  pptx: {
    label: 'Attach template',
    title: 'A .pptx of yours: the deck is built on its masters, layouts and theme.',
    accept: '.pptx',
  },
};
const READ_WAITS_MS = [200, 400, 800, 1500, 3000, 5000, 5000, 5000, 5000];

/** A file's `/file/info` once it is read (or could not be); null when that takes too long. */
async function readFile(fileId) {
  for (const wait of [0, ...READ_WAITS_MS]) {
    if (wait) await new Promise((resolve) => setTimeout(resolve, wait));
    const info = await getJson(`/file/info/${encodeURIComponent(fileId)}`);
    if (info.status !== 'processing') return info;
  }
  return null;
}

const isPptx = ({ fileName, mimeType }) => mimeType === PPTX || /\.pptx$/i.test(fileName);

export class Attachment {
  /**
   * `agent` is the agent picker; `attach` holds the `button` (its text in `label`, the
   * file `input` inside) and the `chip` that names the file (`name`) with its remove
   * button (`clear`). `readsImages()` says whether the picked model sees a picture that
   * has no text; `onNotice(message)` tells the reader, `onError(error)` shows a failure.
   */
  constructor(parts) {
    Object.assign(this, parts);
    const { label, input, clear } = parts;
    this.defaults = { label: label.textContent, accept: input.accept };
    /** `{fileId, fileName, mimeType}` once uploaded and read. */
    this.file = null;
    /** The upload on its way: `{fileName, mimeType, stage, done, resolve}`; `done` gives
     * the file or null. */
    this.pending = null;
    input.addEventListener('change', () => {
      if (input.files.length) this.upload(input.files[0]);
    });
    clear.addEventListener('click', () => this.set(null));
  }

  /** What the picked agent does with a file: `{needs, accepts, template}`. */
  use() {
    const option = this.agent.selectedOptions[0];
    const data = option?.dataset ?? {};
    return {
      needs: 'needsFile' in data,
      accepts: 'acceptsFile' in data,
      template: TEMPLATES[option?.value] ?? null,
    };
  }

  /** Whether the picked agent takes `file` (`{fileName, mimeType}`): a template, only a .pptx. */
  takes(file) {
    const { accepts, template } = this.use();
    return template ? isPptx(file) : accepts;
  }

  /** The attached file, if it is one the picked agent takes. */
  current() {
    return this.file && this.takes(this.file) ? this.file : null;
  }

  /** The stream's fields for the file: `fileId`, `templateFileId`, or none. */
  fields() {
    const file = this.current();
    if (!file) return {};
    return this.use().template ? { templateFileId: file.fileId } : { fileId: file.fileId };
  }

  /** The name of the file on its way, if the picked agent takes it; else ''. */
  get waitingFor() {
    return this.pending && this.takes(this.pending) ? this.pending.fileName : '';
  }

  /** The file once the upload on its way ends: null when it could not be read, or was
   * taken off (the reader removed it, or moved to another conversation). */
  ready() {
    return this.pending?.done ?? Promise.resolve(this.file);
  }

  /** Attach `file` as it is known (a reopened conversation's), or none; an upload on its
   * way no longer counts. */
  set(file) {
    this.settle(null);
    this.file = file;
    this.show();
  }

  /** A reopened conversation's file, named once `/file/info` says (its history gives an id). */
  restore(fileId) {
    this.set(fileId ? { fileId, fileName: 'Attached file', mimeType: '' } : null);
    if (fileId) this.describe(fileId);
  }

  async describe(fileId) {
    try {
      const info = await getJson(`/file/info/${encodeURIComponent(fileId)}`);
      if (this.file?.fileId === fileId && info.fileName) {
        this.file = { fileId, fileName: info.fileName, mimeType: info.mimeType ?? '' };
        this.show();
      }
    } catch {
      // A file deleted since keeps the generic name; asking about it will say it is gone.
    }
  }

  /** Ends the wait on the upload on its way with `file` (a file, a promise of one, null). */
  settle(file) {
    this.pending?.resolve(file);
    this.pending = null;
  }

  /** The button, the chip and what the file picker offers, for the picked agent. */
  show() {
    const { accepts, template } = this.use();
    this.attach.hidden = !accepts && !template;
    this.label.textContent = template?.label ?? this.defaults.label;
    this.button.title = template?.title ?? '';
    this.input.accept = template?.accept ?? this.defaults.accept;
    this.clear.setAttribute('aria-label', template ? 'Remove template' : 'Remove file');
    const file = this.current();
    let text = '';
    if (this.pending) text = `${this.pending.stage} ${this.pending.fileName}…`;
    else if (file) text = template ? `Template: ${file.fileName}` : file.fileName;
    this.name.textContent = text;
    this.chip.hidden = !text;
  }

  /** Open the file picker (an example that goes with a file was picked). */
  pick() {
    this.input.click();
  }

  /** Take a file dropped anywhere on the page (`composer` shows it can), not opened by the
   * browser in the page's place, and a picture (a screenshot) pasted into `question`;
   * pasted text stays text. */
  takeDrops(composer, question) {
    const carriesFiles = (transfer) => [...(transfer?.types ?? [])].includes('Files');
    document.addEventListener('dragover', (event) => {
      if (!carriesFiles(event.dataTransfer)) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = 'copy';
      composer.classList.add('dropping');
    });
    document.addEventListener('dragleave', (event) => {
      if (event.relatedTarget === null) composer.classList.remove('dropping');
    });
    document.addEventListener('drop', (event) => {
      composer.classList.remove('dropping');
      if (!carriesFiles(event.dataTransfer)) return;
      event.preventDefault();
      if (event.dataTransfer.files.length) this.offer([...event.dataTransfer.files]);
    });
    question.addEventListener('paste', (event) => {
      const files = [...(event.clipboardData?.files ?? [])];
      if (!files.length || event.clipboardData.getData('text/plain')) return;
      event.preventDefault();
      this.offer(files);
    });
  }

  /** A file dragged onto the page or pasted into the question box, attached as if picked,
   * where the agent takes one; otherwise the reader is told which agents do. */
  offer(files) {
    const { accepts, template } = this.use();
    if (!accepts && !template) {
      const readers = [...this.agent.options].filter((o) => 'acceptsFile' in o.dataset);
      const names = readers.map((o) => o.textContent).join(', ');
      this.onNotice(
        readers.length
          ? `This agent does not read files: pick one that does (${names}) to attach one.`
          : 'No agent on this server reads files.',
      );
      return;
    }
    if (files.length > 1) this.onNotice(`One file at a time: ${files[0].name} is attached.`);
    this.upload(files[0]);
  }

  /** Attach a file, once it is known that the agent can read it: one it cannot (a photo
   * with no text and no model that sees images) is refused now, with the reason, rather
   * than by the answer after a question has been spent on it. */
  async upload(file) {
    this.input.value = '';
    if (this.use().template && !isPptx({ fileName: file.name, mimeType: file.type })) {
      const agent = this.agent.selectedOptions[0]?.textContent ?? 'This agent';
      this.onNotice(
        `The ${agent} agent takes a .pptx as the template of its deck: ${file.name} is not one.`,
      );
      return;
    }
    let resolve;
    const done = new Promise((settle) => {
      resolve = settle;
    });
    // A file picked while another is on its way replaces it: a question waiting for the
    // first goes with this one.
    this.settle(done);
    const upload = { fileName: file.name, mimeType: file.type, stage: 'Uploading', done, resolve };
    this.pending = upload;
    this.file = null;
    this.show();
    const form = new FormData();
    form.append('file', file);
    let attached = null;
    try {
      const data = await getJson('/file/upload', { method: 'POST', body: form });
      const fileName = data.fileName ?? file.name;
      upload.stage = 'Reading';
      if (this.pending === upload) this.show();
      const info = await readFile(data.fileId).catch(() => null);
      const image = (data.mimeType ?? '').startsWith('image/');
      if (info?.status === 'failed' && !(image && this.readsImages())) {
        if (this.pending === upload) {
          const why = info.error || 'no text could be found in it.';
          this.onNotice(`${fileName} cannot be read: ${why}`);
        }
        return;
      }
      attached = { fileId: data.fileId, fileName, mimeType: data.mimeType ?? file.type };
    } catch (error) {
      if (this.pending !== upload) return;
      if (error instanceof ApiError && [404, 405, 501].includes(error.status)) {
        this.onNotice('File upload is not available on this server.');
      } else {
        this.onError(error);
      }
    } finally {
      if (this.pending === upload) {
        this.file = attached;
        this.settle(attached);
        this.show();
      }
    }
  }
}
