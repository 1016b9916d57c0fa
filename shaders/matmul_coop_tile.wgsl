// The tile product the matrix-core kernels share (cooperative matrices): TM rows of W by TN tokens of
// X, multiplied in S x S x S products of f16 with f32 sums (S is 16 on most GPUs, 8 on Apple's and on
// lavapipe). Per step of CHUNKS 32-weight chunks along the rows, the workgroup dequantizes its rows'
// chunks and converts its tokens' x into f16 tiles in workgroup memory; each of its first SUBGROUPS
// subgroups then multiplies an MB S-token by MB S-row block of the tile, its MB x MB sums held in the
// matrix cores' registers across the steps. The sums leave through workgroup memory, one product of
// every block at a time, for the kernel's store_sums. WG is SUBGROUPS subgroups of the adapter's
// widest; where the driver runs narrower ones, those past SUBGROUPS help with the loads and stores
// only. Where BUFFERS is 2, workgroup memory holds two steps, and the loads fill the next step's while
// the subgroups multiply this one's, one barrier a step: every thread loads, or where HELPED (WG
// twice the multiplying subgroups) the second half alone, a step ahead of the first's products. The
// kernel declares W, X and P (with cols and row_bytes) and the interface of tile.wgsl; the prelude
// enables f16 and wgpu_cooperative_matrix, and sets TM, TN, S, CHUNKS, MB, BUFFERS, HELPED and the
// matrix types MatA, MatB and MatC.

const SUBS: u32 = BLOCK_LEN / 32u;
const SUBGROUPS: u32 = (TM / (MB * S)) * (TN / (MB * S));
const BLOCK_ROWS: u32 = TM / (MB * S); // blocks across the tile's rows
override WG: u32 = 128u; // SUBGROUPS subgroups of the adapter's widest
// A tile row's f16: a step's values and 8 more, so that rows start 16 bytes past a multiple of 64:
// 16-byte aligned for the matrix loads, and not all in one bank. The tiles hold them four to a
// vec4, so that a thread stores four at once; the matrices load from them in those units (strides
// and offsets in vec4s), as SPIR-V's cooperative loads take a vector array.
const KS: u32 = 32u * CHUNKS + 8u;
const KS4: u32 = KS / 4u;

// A step's tile of each, BUFFERS of them one after the other.
const W_STEP: u32 = TM * KS4;
const X_STEP: u32 = TN * KS4;

var<workgroup> w_tile: array<vec4<f16>, BUFFERS * W_STEP>; // [row][k]: the product's B, column-major
var<workgroup> x_tile: array<vec4<f16>, BUFFERS * X_STEP>; // [token][k]: its A, row-major
var<workgroup> sums: array<f32, SUBGROUPS * S * S>;    // one product of each block, [token][row]

// The rows of W (as f16) for step s, chunks CHUNKS s.. of each, into the step's buffer; rows outside
// [lo, hi) and chunks past the row's are zero. Loader t of `loaders`; where there are more loaders
// than the step has chunks, the loaders of a chunk each keep some of its 8 vec4.
fn load_weights(t: u32, loaders: u32, s: u32, tile: Tile) {
    let per_chunk = max(1u, loaders / (TM * CHUNKS));
    let kept = 8u / per_chunk;
    let buffer = (s % BUFFERS) * W_STEP;
    for (var k = t / per_chunk; k < TM * CHUNKS; k += loaders / per_chunk) {
        let j = k / CHUNKS;
        let c = s * CHUNKS + k % CHUNKS;
        let at = buffer + j * KS4 + 8u * (k % CHUNKS);
        let i0 = (t % per_chunk) * kept;
        if (j >= tile.lo && j < tile.hi && c < P.cols / 32u) {
            let row = tile.first + j - tile.lo;
            let w = dequant32(row * P.row_bytes + (c / SUBS) * BLOCK_BYTES, c % SUBS);
            for (var i = i0; i < i0 + kept; i++) {
                w_tile[at + i] = vec4<f16>(w[i]);
            }
        } else {
            for (var i = i0; i < i0 + kept; i++) {
                w_tile[at + i] = vec4<f16>();
            }
        }
    }
}

// The tokens' x (as f16) for the same columns; tokens past the tile's and columns past the row's
// are zero.
fn load_x(t: u32, loaders: u32, s: u32, tile: Tile) {
    let buffer = (s % BUFFERS) * X_STEP;
    for (var k = t; k < 8u * CHUNKS * TN; k += loaders) {
        let n = k / (8u * CHUNKS);
        let i = k % (8u * CHUNKS);
        var x = vec4<f32>(0.0);
        if (n < tile.tokens && s * CHUNKS + i / 8u < P.cols / 32u) {
            x = X[x_start(tile, n) + s * 8u * CHUNKS + i];
        }
        x_tile[buffer + n * KS4 + i] = vec4<f16>(x);
    }
}

// Hands product (qt, qr) of every block in `sums` to store_sums, rows in pairs: block b's product
// (qt, qr) holds S tokens from MB S (b / BLOCK_ROWS) + S qt and S rows from MB S (b % BLOCK_ROWS) + S qr.
fn store_product(t: u32, qt: u32, qr: u32, tile: Tile) {
    let pairs = S * S / 2u;
    for (var k = t; k < SUBGROUPS * pairs; k += WG) {
        let b = k / pairs;
        let n = (k % pairs) / (S / 2u);
        let r = 2u * (k % (S / 2u));
        let token = MB * S * (b / BLOCK_ROWS) + S * qt + n;
        let row = MB * S * (b % BLOCK_ROWS) + S * qr + r;
        let at = b * S * S + n * S + r;
        if (token < tile.tokens) {
            store_sums(tile, token, row, sums[at], sums[at + 1u]);
        }
    }
}

// The tile's products, handed to store_sums: subgroup sg multiplies one block.
fn multiply_tile(t: u32, sg: u32, tile: Tile) {
    // This subgroup's block: MB S tokens from bt and MB S rows from br of the tile.
    let multiplies = sg < SUBGROUPS;
    let b = min(sg, SUBGROUPS - 1u);
    let bt = MB * S * (b / BLOCK_ROWS);
    let br = MB * S * (b % BLOCK_ROWS);
    // Product (i, j) of the block, S tokens from bt + S i by S rows from br + S j, is c[MB i + j].
    var c: array<MatC, MB * MB>;
    for (var i = 0u; i < MB * MB; i++) {
        c[i] = MatC();
    }
    // Who loads: every thread, or a step ahead with helpers, the helpers alone.
    let helpers_load = BUFFERS == 2u && HELPED;
    let loads = !helpers_load || t >= WG / 2u;
    let loader = select(t, t - WG / 2u, helpers_load);
    let loaders = select(WG, WG / 2u, helpers_load);
    let steps = (P.cols / 32u + CHUNKS - 1u) / CHUNKS;
    if (BUFFERS == 2u) {
        if (loads) {
            load_weights(loader, loaders, 0u, tile);
            load_x(loader, loaders, 0u, tile);
        }
        workgroupBarrier();
    }
    for (var s = 0u; s < steps; s++) {
        // One step's buffer: loaded, then multiplied. Two: the next step's loaded while this
        // one's is multiplied, which the barrier at the end of the step before published.
        if (BUFFERS == 1u) {
            load_weights(t, WG, s, tile);
            load_x(t, WG, s, tile);
            workgroupBarrier();
        }
        if (BUFFERS == 2u && loads && s + 1u < steps) {
            load_weights(loader, loaders, s + 1u, tile);
            load_x(loader, loaders, s + 1u, tile);
        }
        let wb = (s % BUFFERS) * W_STEP;
        let xb = (s % BUFFERS) * X_STEP;
        if (multiplies) {
            for (var k = 0u; k < 32u * CHUNKS; k += S) {
                var a: array<MatA, MB>;
                var w: array<MatB, MB>;
                for (var i = 0u; i < MB; i++) {
                    a[i] = coopLoadT<MatA>(&x_tile[xb + ((bt + S * i) * KS + k) / 4u], KS4);
                    w[i] = coopLoad<MatB>(&w_tile[wb + ((br + S * i) * KS + k) / 4u], KS4);
                }
                for (var i = 0u; i < MB; i++) {
                    for (var j = 0u; j < MB; j++) {
                        c[MB * i + j] = coopMultiplyAdd(a[i], w[j], c[MB * i + j]);
                    }
                }
            }
        }
        workgroupBarrier();
    }
    let at = b * S * S;
    for (var i = 0u; i < MB * MB; i++) {
        if (multiplies) {
            coopStoreT(c[i], &sums[at], S);
        }
        workgroupBarrier();
        store_product(t, i / MB, i % MB, tile);
        workgroupBarrier();
    }
}
