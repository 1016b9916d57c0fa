// The tile product the matrix-core kernels share (cooperative matrices): TM rows of W by TN tokens of
// X, multiplied in S x S x S products of f16 with f32 sums (S is 16 on most GPUs, 8 on Apple's and on
// lavapipe). Per step of CHUNKS 32-weight chunks along the rows, the workgroup dequantizes its rows'
// chunks and converts its tokens' x into f16 tiles in workgroup memory; each of
// its first SUBGROUPS subgroups then multiplies a 2S-token by 2S-row block of the tile, its four
// S x S sums held in the matrix cores' registers across the steps. The sums leave through workgroup memory, one quarter of every
// block at a time, for the kernel's store_sums. WG is SUBGROUPS subgroups of the adapter's widest;
// where the driver runs narrower ones, those past SUBGROUPS help with the loads and stores only.
// The kernel declares W, X and P (with cols and row_bytes) and the interface of tile.wgsl; the
// prelude enables f16 and wgpu_cooperative_matrix, and sets TM, TN, S, CHUNKS and the matrix types
// MatA, MatB and MatC.

const SUBS: u32 = BLOCK_LEN / 32u;
const SUBGROUPS: u32 = (TM / (2u * S)) * (TN / (2u * S));
const BLOCK_ROWS: u32 = TM / (2u * S); // blocks across the tile's rows
override WG: u32 = 128u; // SUBGROUPS subgroups of the adapter's widest
// A tile row's f16: a step's values and 8 more, so that rows start 16 bytes past a multiple of 64:
// 16-byte aligned for the matrix loads, and not all in one bank.
const KS: u32 = 32u * CHUNKS + 8u;

var<workgroup> w_tile: array<f16, TM * KS>;            // [row][k]: the product's B, column-major
var<workgroup> x_tile: array<f16, TN * KS>;            // [token][k]: its A, row-major
var<workgroup> sums: array<f32, SUBGROUPS * S * S>;    // one quarter of each block, [token][row]

// The rows of W (as f16) for step s, chunks CHUNKS s.. of each; rows outside [lo, hi) and chunks
// past the row's are zero. Where the workgroup has more threads than the step has chunks, the
// threads of a chunk each keep some of its 8 vec4.
fn load_weights(t: u32, s: u32, tile: Tile) {
    let per_chunk = max(1u, WG / (TM * CHUNKS));
    let kept = 8u / per_chunk;
    for (var k = t / per_chunk; k < TM * CHUNKS; k += WG / per_chunk) {
        let j = k / CHUNKS;
        let c = s * CHUNKS + k % CHUNKS;
        let at = j * KS + 32u * (k % CHUNKS);
        let i0 = (t % per_chunk) * kept;
        if (j >= tile.lo && j < tile.hi && c < P.cols / 32u) {
            let row = tile.first + j - tile.lo;
            let w = dequant32(row * P.row_bytes + (c / SUBS) * BLOCK_BYTES, c % SUBS);
            for (var i = i0; i < i0 + kept; i++) {
                let h = vec4<f16>(w[i]);
                w_tile[at + 4u * i] = h.x;
                w_tile[at + 4u * i + 1u] = h.y;
                w_tile[at + 4u * i + 2u] = h.z;
                w_tile[at + 4u * i + 3u] = h.w;
            }
        } else {
            for (var i = 4u * i0; i < 4u * (i0 + kept); i++) {
                w_tile[at + i] = 0.0h;
            }
        }
    }
}

// The tokens' x (as f16) for the same columns; tokens past the tile's and columns past the row's
// are zero.
fn load_x(t: u32, s: u32, tile: Tile) {
    for (var k = t; k < 8u * CHUNKS * TN; k += WG) {
        let n = k / (8u * CHUNKS);
        let i = k % (8u * CHUNKS);
        var x = vec4<f32>(0.0);
        if (n < tile.tokens && s * CHUNKS + i / 8u < P.cols / 32u) {
            x = X[x_start(tile, n) + s * 8u * CHUNKS + i];
        }
        let h = vec4<f16>(x);
        let at = n * KS + 4u * i;
        x_tile[at] = h.x;
        x_tile[at + 1u] = h.y;
        x_tile[at + 2u] = h.z;
        x_tile[at + 3u] = h.w;
    }
}

// Hands the quarter of every block in `sums` to store_sums, rows in pairs: block b's quarter (qt, qr)
// holds S tokens from 2S (b / BLOCK_ROWS) + S qt and S rows from 2S (b % BLOCK_ROWS) + S qr.
fn store_quarter(t: u32, qt: u32, qr: u32, tile: Tile) {
    let pairs = S * S / 2u;
    for (var k = t; k < SUBGROUPS * pairs; k += WG) {
        let b = k / pairs;
        let n = (k % pairs) / (S / 2u);
        let r = 2u * (k % (S / 2u));
        let token = 2u * S * (b / BLOCK_ROWS) + S * qt + n;
        let row = 2u * S * (b % BLOCK_ROWS) + S * qr + r;
        let at = b * S * S + n * S + r;
        if (token < tile.tokens) {
            store_sums(tile, token, row, sums[at], sums[at + 1u]);
        }
    }
}

// The tile's products, handed to store_sums: subgroup sg multiplies one block.
fn multiply_tile(t: u32, sg: u32, tile: Tile) {
    // This subgroup's block: 2S tokens from bt and 2S rows from br of the tile.
    let multiplies = sg < SUBGROUPS;
    let b = min(sg, SUBGROUPS - 1u);
    let bt = 2u * S * (b / BLOCK_ROWS);
    let br = 2u * S * (b % BLOCK_ROWS);
    var c00 = MatC();
    var c01 = MatC();
    var c10 = MatC();
    var c11 = MatC();
    for (var s = 0u; s < (P.cols / 32u + CHUNKS - 1u) / CHUNKS; s++) {
        load_weights(t, s, tile);
        load_x(t, s, tile);
        workgroupBarrier();
        if (multiplies) {
            for (var k = 0u; k < 32u * CHUNKS; k += S) {
                let ia0 = bt * KS + k;
                let ia1 = ia0 + S * KS;
                let ib0 = br * KS + k;
                let ib1 = ib0 + S * KS;
                let a0 = coopLoadT<MatA>(&x_tile[ia0], KS);
                let a1 = coopLoadT<MatA>(&x_tile[ia1], KS);
                let b0 = coopLoad<MatB>(&w_tile[ib0], KS);
                let b1 = coopLoad<MatB>(&w_tile[ib1], KS);
                c00 = coopMultiplyAdd(a0, b0, c00);
                c01 = coopMultiplyAdd(a0, b1, c01);
                c10 = coopMultiplyAdd(a1, b0, c10);
                c11 = coopMultiplyAdd(a1, b1, c11);
            }
        }
        workgroupBarrier();
    }
    // Quarter (qt, qr) is c{qt}{qr}: S tokens from S qt and S rows from S qr of the block.
    let at = b * S * S;
    if (multiplies) {
        coopStoreT(c00, &sums[at], S);
    }
    workgroupBarrier();
    store_quarter(t, 0u, 0u, tile);
    workgroupBarrier();
    if (multiplies) {
        coopStoreT(c01, &sums[at], S);
    }
    workgroupBarrier();
    store_quarter(t, 0u, 1u, tile);
    workgroupBarrier();
    if (multiplies) {
        coopStoreT(c10, &sums[at], S);
    }
    workgroupBarrier();
    store_quarter(t, 1u, 0u, tile);
    workgroupBarrier();
    if (multiplies) {
        coopStoreT(c11, &sums[at], S);
    }
    workgroupBarrier();
    store_quarter(t, 1u, 1u, tile);
}
