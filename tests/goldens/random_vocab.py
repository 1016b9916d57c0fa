"""The 512-token byte-level gpt2 BPE vocabulary of the random-weight test models, shared by the
scripts that write them (make_random_llama.py and the others here, scripts/make-*shape*.py) so that
they all get the same tokens and merges from the same seed. Needs only gguf and numpy."""

import gguf

N_VOCAB = 512


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character mapping."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def vocabulary(rng):
    """256 byte tokens, 255 merges over letters and space-prefixed letters, then <|endoftext|>."""
    b2u = bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    have = set(tokens)
    space = b2u[ord(" ")]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    merges = []

    def merge(a, b):
        if a + b not in have and len(merges) < 255:
            merges.append(f"{a} {b}")
            tokens.append(a + b)
            have.add(a + b)

    for c in letters:  # " a" .. " z"
        merge(space, c)
    pieces = letters + [space + c for c in letters]
    while len(merges) < 255:  # random pairs of known pieces, so longer words grow out of earlier merges
        a = pieces[rng.integers(len(pieces))]
        b = letters[rng.integers(len(letters))]
        if len(a) < 4:
            before = len(merges)
            merge(a, b)
            if len(merges) > before:
                pieces.append(a + b)
    tokens.append("<|endoftext|>")
    types = [gguf.TokenType.NORMAL] * (len(tokens) - 1) + [gguf.TokenType.CONTROL]
    assert len(tokens) == N_VOCAB, len(tokens)
    return tokens, types, merges
