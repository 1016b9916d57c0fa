"""Tiny random-weight BERT-family files in llama.cpp's layouts (`bert`, `nomic-bert`) with a small
WordPiece vocabulary, for tests/goldens/make_embedding_goldens.py. Width 128, 4 heads of 32, n_ff 256,
2 layers, F16 matrices, F32 norms and biases, layer_norm_epsilon 1e-12 as BERT's.

The vocabulary (256 tokens): [PAD] [UNK] [CLS] [SEP] [MASK], then word-initial pieces (`▁` + a letter,
digit or punctuation mark, then random longer ones) and the same letters and digits as continuations;
ids named in the metadata as BERT files name them.
"""
import gguf
import numpy as np

N_EMBD, N_HEAD, N_FF, N_LAYER, N_CTX_TRAIN, N_VOCAB = 128, 4, 256, 2, 128, 256
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def vocabulary(rng):
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    marks = list(".,!?;:'\"()-")
    tokens = SPECIALS + ["\u2581" + c for c in letters + marks] + letters
    have = set(tokens)
    while len(tokens) < N_VOCAB:
        word = "".join(rng.choice(letters[:26], size=int(rng.integers(2, 5))))
        for piece in ("\u2581" + word, word):
            if piece not in have and len(tokens) < N_VOCAB:
                tokens.append(piece)
                have.add(piece)
    types = [gguf.TokenType.CONTROL] * len(SPECIALS) + [gguf.TokenType.NORMAL] * (N_VOCAB - len(SPECIALS))
    types[1] = gguf.TokenType.UNKNOWN
    return tokens, types


def write(path, arch, rng, pooling):
    """Writes a `bert` or `nomic-bert` file pooled as `pooling` (gguf.PoolingType)."""
    d, ff = N_EMBD, N_FF
    mat = lambda rows, cols, scale=1.0: (rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)).astype(np.float16)
    vec = lambda n, scale=0.1: (rng.standard_normal(n) * scale).astype(np.float32)
    gain = lambda n: rng.uniform(0.6, 1.4, n).astype(np.float32)
    tokens, types = vocabulary(rng)
    w = {
        "token_embd.weight": rng.standard_normal((N_VOCAB, d)).astype(np.float16),
        "token_types.weight": (rng.standard_normal((2, d)) * 0.5).astype(np.float32),
        "token_embd_norm.weight": gain(d),
        "token_embd_norm.bias": vec(d),
    }
    if arch == "bert":
        w["position_embd.weight"] = (rng.standard_normal((N_CTX_TRAIN, d)) * 0.5).astype(np.float16)
    for l in range(N_LAYER):
        p = f"blk.{l}."
        if arch == "nomic-bert":
            w[p + "attn_qkv.weight"] = np.concatenate([mat(d, d, 2.0), mat(d, d, 2.0), mat(d, d)])
        else:
            w[p + "attn_q.weight"], w[p + "attn_q.bias"] = mat(d, d, 2.0), vec(d)
            w[p + "attn_k.weight"], w[p + "attn_k.bias"] = mat(d, d, 2.0), vec(d)
            w[p + "attn_v.weight"], w[p + "attn_v.bias"] = mat(d, d), vec(d)
        w[p + "attn_output.weight"] = mat(d, d)
        if arch == "bert":
            w[p + "attn_output.bias"] = vec(d)
        w[p + "attn_output_norm.weight"], w[p + "attn_output_norm.bias"] = gain(d), vec(d)
        if arch == "nomic-bert":
            w[p + "ffn_gate.weight"] = mat(ff, d)
            w[p + "ffn_up.weight"] = mat(ff, d)
            w[p + "ffn_down.weight"] = mat(d, ff)
        else:
            w[p + "ffn_up.weight"], w[p + "ffn_up.bias"] = mat(ff, d), vec(ff)
            w[p + "ffn_down.weight"], w[p + "ffn_down.bias"] = mat(d, ff), vec(d)
        w[p + "layer_output_norm.weight"], w[p + "layer_output_norm.bias"] = gain(d), vec(d)

    wr = gguf.GGUFWriter(path, arch)
    wr.add_name("tiny-random")
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_context_length(N_CTX_TRAIN)
    wr.add_embedding_length(d)
    wr.add_block_count(N_LAYER)
    wr.add_feed_forward_length(ff)
    wr.add_head_count(N_HEAD)
    wr.add_layer_norm_eps(1e-12)
    wr.add_causal_attention(False)
    wr.add_pooling_type(pooling)
    wr.add_token_type_count(2)
    if arch == "nomic-bert":
        wr.add_rope_freq_base(1000.0)
    wr.add_tokenizer_model("bert")
    wr.add_tokenizer_pre("bert-bge")
    wr.add_token_list(tokens)
    wr.add_token_types(types)
    wr.add_bos_token_id(2)
    wr.add_sep_token_id(3)
    wr.add_unk_token_id(1)
    wr.add_pad_token_id(0)
    wr.add_uint32("tokenizer.ggml.cls_token_id", 2)
    wr.add_mask_token_id(4)
    for name, t in w.items():
        wr.add_tensor(name, t)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
