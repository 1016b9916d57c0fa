//! What `MatvecShape` offers the tuner, and what it takes unless tuned, shape by shape.

use super::*;
use crate::gpu::matvec_kernel::Offers;
use crate::gpu::PipelineKey;

fn offers(int8_x: bool) -> Offers {
    Offers {
        subgroup_size: Some(32),
        int8_x,
        ..Offers::default()
    }
}

/// Rows in groups that each read an x of their own (MLA's per-head matrices).
fn per_head_rows() -> MatvecShape {
    MatvecShape {
        matrices: 16,
        ..MatvecShape::of(Kernel::Matvec, GgmlType::Q8_0, 512, 128)
    }
}

/// Candidates on 8-bit x with a block's parts as 16 threads' (the wide ones, Q4_K's and Q5_K's:
/// `wide_parts_are_offered_where_blocks_keep_16_byte_bounds`).
fn on_q8(shape: &MatvecShape, offers: Offers) -> usize {
    let candidates = shape.candidates(offers).into_iter();
    candidates
        .filter(|k| k.split == Split::PartsQ8 && !k.wide)
        .count()
}

/// A thread a whole block is a candidate where workgroups run on a CPU only: on a GPU a
/// 4096-wide Q4_K decode product keeps its other splits and loses a third of its candidates.
#[test]
fn whole_blocks_are_offered_where_workgroups_run_on_a_cpu() {
    let shape = MatvecShape::of(Kernel::Matvec, GgmlType::Q4_K, 4096, 4096);
    let gpu = shape.candidates(offers(true));
    let cpu = shape.candidates(Offers {
        cpu_forms: true,
        ..offers(true)
    });
    let blocks = |c: &[MatvecKernel]| c.iter().filter(|k| k.split == Split::Blocks).count();
    assert_eq!(blocks(&gpu), 0);
    assert_eq!(
        blocks(&cpu),
        30,
        "1 to 16 threads a row, two sums, three workgroups"
    );
    // And four rows a slot (`larger_slots_are_a_cpu_form_of_one_token_products`).
    assert_eq!(gpu.len() + 30 + 8, cpu.len());
    let kept = |c: &[MatvecKernel]| -> Vec<MatvecKernel> {
        c.iter()
            .filter(|k| k.split != Split::Blocks && k.slot_size != 4)
            .copied()
            .collect()
    };
    assert_eq!(kept(&gpu), kept(&cpu));
    let pairs = Kernel::MatvecPairs(Store::Rows, XNorm::None);
    let step = MatvecShape::of(pairs, GgmlType::Q4_K, 4096, 4096).in_step(4);
    let on = |cpu_forms| {
        let offers = Offers {
            cpu_forms,
            ..offers(true)
        };
        step.candidates(offers)
            .iter()
            .filter(|k| k.slot_size == 4)
            .count()
    };
    assert_eq!(
        (on(false), on(true)),
        (0, 10),
        "by chunks 1, 2 and 4 threads a row, by wide parts 8 and 16, two sums"
    );
}

/// Untuned where the adapter runs workgroups on a CPU, a prompt's plain products take the tile in
/// registers, a step's pair products of several tokens (x normed on the way in or not) eight rows
/// a slot (by wide parts where the type is quantized), its one-token products their larger slot
/// by wide parts, and the other products of a few tokens 4 threads a row, each a candidate of its
/// shape; the experts' tiles keep their defaults, as GPUs keep every default.
#[test]
fn untuned_kernels_follow_the_adapter() {
    let cpu = Adapter {
        workgroup_bytes: 32768,
        runs_on_cpu: true,
        split_workgroups: 256,
    };
    let gpu = Adapter {
        runs_on_cpu: false,
        ..cpu
    };
    let plain = Kernel::Matmul(Store::Glu(Activation::Silu), XNorm::None);
    let chunk = MatvecShape::chunk(plain, GgmlType::Q4_K, (576, 1536), 1, 64);
    assert_eq!(chunk.untuned_kernel(cpu).workgroup, ROWS_TILE_WORKGROUP);
    let experts = MatvecShape::chunk(Kernel::MatmulId, GgmlType::Q4_K, (576, 1536), 8, 64);
    assert_eq!(experts.untuned_kernel(cpu), experts.default_kernel());
    let step = MatvecShape::of(Kernel::Matvec, GgmlType::Q4_K, 576, 1536);
    let four = MatvecShape { tokens: 4, ..step };
    let narrow = MatvecShape::of(Kernel::Matvec, GgmlType::Q8_0, 64, 256); // 2 chunks a row
    let pairs = Kernel::MatvecPairs(Store::Rows, XNorm::None);
    let check = MatvecShape {
        tokens: 4,
        ..MatvecShape::of(pairs, GgmlType::Q4_K, 576, 1536)
    };
    let normed = MatvecShape {
        kernel: Kernel::MatvecPairs(Store::Rows, XNorm::Rms(0)),
        ..check
    };
    for shape in [chunk, experts, step, four, narrow, check, normed] {
        assert_eq!(
            shape.untuned_kernel(gpu),
            shape.default_kernel(),
            "{}",
            shape.key()
        );
        let untuned = shape.untuned_kernel(cpu);
        let on_cpu = Offers {
            cpu_forms: true,
            ..offers(false)
        };
        let offered = shape.candidates(on_cpu).contains(&untuned);
        assert!(offered, "{} untuned on a CPU: {untuned}", shape.key());
    }
    // A one-token product, four rows a slot by wide parts, a block's 8 threads a row (Q4_K's), or
    // one (Q8_0's, also where its rows are 2 blocks); a product of four tokens 4 threads a row.
    for (shape, threads_per_row, slot_size) in [(step, 8, 4), (narrow, 1, 4), (four, 4, 1)] {
        let on_cpu = shape.untuned_kernel(cpu);
        let form = (on_cpu.workgroup, on_cpu.threads_per_row, on_cpu.slot_size);
        assert_eq!(form, (128, threads_per_row, slot_size), "{}", shape.key());
        assert_eq!(on_cpu.wide, slot_size == 4, "{}", shape.key());
        assert!(
            !on_cpu.subgroup_sum,
            "shuffles only where checked, when tuning"
        );
    }
    // A one-token pair product two pairs a slot; F32, which has no wide form, by chunks.
    let pair = MatvecShape::of(pairs, GgmlType::Q5_0, 896, 9728).untuned_kernel(cpu);
    assert_eq!(
        (pair.threads_per_row, pair.slot_size, pair.wide),
        (1, 2, true)
    );
    let f32_plain = MatvecShape::of(Kernel::Matvec, GgmlType::F32, 576, 1536);
    assert_eq!(f32_plain.untuned_kernel(cpu).slot_size, 1);
    let in_registers = MatvecKernel::tile(ROWS_TILE_WORKGROUP);
    for shape in [check, normed] {
        let k = shape.untuned_kernel(cpu);
        assert!(k.slot_size == 4 && !k.subgroup_sum, "{}: {k}", shape.key());
        // Q4_K's by wide parts, a block's 8 threads a row.
        assert!(
            k.wide && k.split == Split::BlockParts,
            "{}: {k}",
            shape.key()
        );
        assert_eq!(k.threads_per_row, 8);
    }
    // A float type's by chunks, 2 threads a row.
    let f16_check = MatvecShape::of(pairs, GgmlType::F16, 576, 1536).in_step(4);
    let k = f16_check.untuned_kernel(cpu);
    assert!(
        k.slot_size == 4 && !k.wide && k.split == Split::Chunks,
        "{k}"
    );
    assert!(f16_check
        .candidates(Offers {
            cpu_forms: true,
            ..offers(false)
        })
        .contains(&k));
    let one_token = MatvecShape {
        tokens: 1,
        ..normed
    };
    assert!(!one_token.candidates(offers(false)).contains(&in_registers));
}

/// Tiles held in f16 are offered a prompt's products where plans may hold them so, as shared
/// tiles (not in registers, a CPU's), and not to a product that norms x nor to a step's pair
/// products; in f16 the largest tile fits WebGPU's 16 KiB of workgroup memory, as in f32 it
/// does not.
#[test]
fn f16_tiles_are_offered_a_prompts_products() {
    let plain = Kernel::Matmul(Store::Rows, XNorm::None);
    let chunk = MatvecShape::chunk(plain, GgmlType::Q4_K, (2048, 2048), 1, 512);
    let f16 = |shape: &MatvecShape, f16_tiles| -> Vec<MatvecKernel> {
        let offers = Offers {
            f16_tiles,
            ..offers(true)
        };
        (shape.candidates(offers).into_iter())
            .filter(|k| k.f16_tile)
            .collect()
    };
    assert!(f16(&chunk, false).is_empty());
    let offered = f16(&chunk, true);
    let workgroups: Vec<u32> = offered.iter().map(|k| k.workgroup).collect();
    assert_eq!(workgroups, [64, 128, 256]);
    assert!(offered
        .iter()
        .all(|k| k.matmul_tile().shared && k.rounds_to_f16()));
    let experts = MatvecShape::chunk(Kernel::MatmulId, GgmlType::Q4_K, (2048, 768), 8, 512);
    assert_eq!(f16(&experts, true).len(), 3);
    let normed = MatvecShape {
        kernel: Kernel::Matmul(Store::Rows, XNorm::Rms(0)),
        ..chunk
    };
    let pairs = Kernel::MatvecPairs(Store::Rows, XNorm::None);
    let step = MatvecShape {
        tokens: 4,
        ..MatvecShape::of(pairs, GgmlType::Q4_K, 2048, 2048)
    };
    assert!(f16(&normed, true).is_empty() && f16(&step, true).is_empty());
    let webgpu = wgpu::Limits::default();
    assert_eq!(webgpu.max_compute_workgroup_storage_size, 16384);
    assert!(chunk.fits(&MatvecKernel::f16_tile(256), &webgpu));
    assert!(!chunk.fits(&MatvecKernel::tile(256), &webgpu));
}

/// Eight rows a slot are offered a step's pair products of several tokens where workgroups run
/// on a CPU (their form), split by chunks, a few threads a row, and no one-token product.
#[test]
fn eight_rows_are_offered_to_a_steps_pair_products() {
    let pairs = Kernel::MatvecPairs(Store::Rows, XNorm::None);
    let one = MatvecShape::of(pairs, GgmlType::Q4_1, 576, 960);
    let several = MatvecShape { tokens: 4, ..one };
    let eights = |shape: &MatvecShape, cpu_forms| -> Vec<MatvecKernel> {
        let offers = Offers {
            cpu_forms,
            ..offers(false)
        };
        let candidates = shape.candidates(offers).into_iter();
        candidates.filter(|k| k.slot_size == 4).collect()
    };
    assert!(eights(&one, true).is_empty());
    assert!(eights(&several, false).is_empty(), "on a GPU");
    let offered = eights(&several, true);
    // By chunks, 1, 2 and 4 threads a row; by wide parts (a Q4_1 block a thread), 1 and 2; two
    // sums each.
    assert_eq!(offered.len(), 10);
    for k in offered {
        let by_chunks = k.split == Split::Chunks && !k.wide && k.threads_per_row <= 4;
        let by_parts = k.split == Split::BlockParts && k.wide && k.threads_per_row <= 2;
        assert!(by_chunks || by_parts, "{k}");
    }
}

/// Two rows a slot are offered a decode step's plain one-token products (not rows in groups,
/// nor several tokens, nor a pair kernel, whose slots take pairs already), split by block parts
/// (on 8-bit x too) or by chunks over 32 threads or more, each with the sum a GPU takes.
#[test]
fn two_rows_are_offered_to_a_steps_plain_products() {
    let plain = MatvecShape::of(Kernel::Matvec, GgmlType::Q6_K, 14336, 4096);
    let twos = |shape: &MatvecShape| -> Vec<MatvecKernel> {
        let candidates = shape.candidates(offers(true)).into_iter();
        candidates.filter(|k| k.slot_size == 2).collect()
    };
    let offered = twos(&plain);
    // 3 workgroups by: block parts and on 8-bit x, 16, 32, 64 threads, and wide, 8 to 64;
    // chunks, 32, 64.
    assert_eq!(offered.len(), 48);
    for k in offered {
        let wide_chunks = k.split == Split::Chunks && k.threads_per_row >= 32;
        let gpu_split = matches!(k.split, Split::BlockParts | Split::PartsQ8);
        assert!(wide_chunks || gpu_split, "{k}");
        let shuffles = k.threads_per_row <= 32; // the subgroup holds the row's threads
        assert_eq!(k.subgroup_sum, shuffles, "{k}");
    }
    let grouped = per_head_rows();
    let four = MatvecShape { tokens: 4, ..plain };
    let pairs = MatvecShape::of(
        Kernel::MatvecPairs(Store::Rows, XNorm::None),
        GgmlType::Q6_K,
        4096,
        1024,
    );
    for shape in [grouped, four, pairs] {
        assert!(twos(&shape).is_empty(), "{}", shape.key());
    }
}

/// Eight tokens a layer are offered a step's pair products of several tokens, split by block
/// parts (the GPU's forms), and no one-token product.
#[test]
fn eight_tokens_are_offered_to_a_steps_pair_products() {
    let pairs = Kernel::MatvecPairs(Store::Glu(Activation::Silu), XNorm::Rms(0));
    let one = MatvecShape::of(pairs, GgmlType::Q4_K, 2048, 2 * 5632);
    let several = MatvecShape { tokens: 4, ..one };
    let eights = |shape: &MatvecShape| -> Vec<MatvecKernel> {
        let candidates = shape.candidates(offers(true)).into_iter();
        candidates.filter(|k| k.eight_tokens).collect()
    };
    assert!(eights(&one).is_empty());
    let offered = eights(&several);
    assert!(!offered.is_empty());
    for k in offered {
        assert!(matches!(k.split, Split::BlockParts | Split::PartsQ8), "{k}");
        assert!(several.candidates(offers(true)).contains(&MatvecKernel {
            eight_tokens: false,
            ..k
        }));
    }
}

/// 8-bit x is offered a decode step's products of the types with that form (one token's or four's),
/// one sum each (shuffles where the subgroups hold a row's threads), and not where plans keep x
/// f32, nor to rows that read x in groups, a prompt's tiles or types without the form.
#[test]
fn eight_bit_x_is_offered_where_it_can_run() {
    let plain = MatvecShape::of(Kernel::Matvec, GgmlType::Q4_K, 4096, 4096);
    // 3 workgroups by 16, 32, 64 threads a row, a row a slot or two
    assert_eq!(on_q8(&plain, offers(true)), 18);
    assert_eq!(on_q8(&plain, offers(false)), 0);
    let pairs = Kernel::MatvecPairs(Store::Rows, XNorm::None);
    let q8_0 = MatvecShape::of(pairs, GgmlType::Q8_0, 896, 1024);
    assert_eq!(on_q8(&q8_0, offers(true)), 9);
    let grouped = per_head_rows();
    let four = MatvecShape { tokens: 4, ..q8_0 };
    let tile = MatvecShape::chunk(
        Kernel::Matmul(Store::Rows, XNorm::None),
        GgmlType::Q8_0,
        (896, 1024),
        1,
        64,
    );
    let q6_k = MatvecShape::of(Kernel::Matvec, GgmlType::Q6_K, 4096, 4096);
    assert_eq!(on_q8(&q6_k, offers(true)), 18);
    let mxfp4 = MatvecShape::of(Kernel::Matvec, GgmlType::MXFP4, 4096, 4096);
    assert_eq!(on_q8(&mxfp4, offers(true)), 18);
    let f16 = MatvecShape::of(Kernel::Matvec, GgmlType::F16, 4096, 4096);
    // Four a layer of workgroups, and eight.
    assert_eq!(on_q8(&four, offers(true)), 18);
    // The experts' gate and up read the token's one x, down the slots' x side by side.
    let glu = Kernel::MatvecIdGlu(Activation::Silu, XNorm::None);
    let gate_up = MatvecShape::of(glu, GgmlType::Q4_K, 2048, 8 * 768);
    assert_eq!(on_q8(&gate_up, offers(true)), 9);
    let down = MatvecShape {
        matrices: 8,
        ..MatvecShape::of(Kernel::MatvecId, GgmlType::Q4_K, 768, 2048)
    };
    assert_eq!(on_q8(&down, offers(true)), 6); // rows of 3 blocks: 16 and 32 threads a row
    assert_eq!((down.x_rows(), gate_up.x_rows()), (8, 1));
    for shape in [grouped, tile, f16] {
        assert_eq!(on_q8(&shape, offers(true)), 0, "{}", shape.key());
    }
    assert_ne!(
        grouped.key(),
        MatvecShape {
            matrices: 1,
            ..grouped
        }
        .key()
    );
}

/// Wide block parts (8 threads a block, a vec4 each) are offered the K-quants' decode products
/// (plain, pairs, the chosen experts'), by block parts and on 8-bit x, from 8 threads a row, and
/// whole blocks a thread the 32-weight types', and F16's and BF16's by parts; not F32's, nor a
/// prompt's tiles.
#[test]
fn wide_parts_are_offered_where_blocks_keep_16_byte_bounds() {
    let wide = |shape: &MatvecShape| -> Vec<MatvecKernel> {
        let candidates = shape.candidates(offers(true)).into_iter();
        candidates.filter(|k| k.wide).collect()
    };
    let pairs = Kernel::MatvecPairs(Store::Glu(Activation::Silu), XNorm::Rms(0));
    for ty in [GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K] {
        let plain = MatvecShape::of(Kernel::Matvec, ty, 4096, 4096);
        let offered = wide(&plain);
        // 3 workgroups by 8, 16, 32 and 64 threads a row, by parts and on 8-bit x, each with
        // the GPU's sum on 8-bit x and both sums by parts, and each again two rows a slot.
        assert!(offered.iter().any(|k| k.threads_per_row == 8), "{ty}");
        assert!(offered.iter().any(|k| k.split == Split::PartsQ8), "{ty}");
        assert!(offered.iter().any(|k| k.slot_size == 2), "{ty}");
        for k in &offered {
            assert!(matches!(k.split, Split::BlockParts | Split::PartsQ8), "{k}");
        }
        assert!(!wide(&MatvecShape::of(pairs, ty, 4096, 2 * 14336)).is_empty());
        // A row of one block takes 8 threads a row and no more.
        let one_block = wide(&MatvecShape::of(Kernel::Matvec, ty, 256, 64));
        assert!(one_block.iter().all(|k| k.threads_per_row == 8), "{ty}");
        let experts = MatvecShape::of(Kernel::MatvecId, ty, 4096, 1024);
        assert!(!wide(&experts).is_empty(), "{ty}");
        let tile = MatvecShape::chunk(Kernel::MatmulId, ty, (4096, 1024), 8, 64);
        assert!(wide(&tile).is_empty(), "{ty}");
    }
    let blocks32 = [
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
    ];
    for ty in blocks32.into_iter().chain([GgmlType::MXFP4]) {
        let offered = wide(&MatvecShape::of(Kernel::Matvec, ty, 4096, 4096));
        assert!(offered.iter().any(|k| k.split == Split::PartsQ8), "{ty}");
        assert!(offered.iter().any(|k| k.split == Split::BlockParts), "{ty}");
    }
    assert!(wide(&MatvecShape::of(Kernel::Matvec, GgmlType::F32, 4096, 4096)).is_empty());
    // The float types' runs of 32, by parts only (they have no form on 8-bit x).
    let f16 = wide(&MatvecShape::of(Kernel::Matvec, GgmlType::F16, 2048, 4096));
    assert!(!f16.is_empty() && f16.iter().all(|k| k.split == Split::BlockParts));
}

/// A step's pair product of several tokens takes eight rows a slot by wide parts where workgroups
/// run on a CPU, for every quantized type (whose wide part is 32 weights): one or two groups of a
/// block's threads a row, both sums, 64 a workgroup; not the float types (parts of 16 weights), not
/// on a GPU, not a one-token product.
#[test]
fn eight_rows_by_wide_parts_are_a_cpu_form_of_the_quantized_types() {
    let pairs = Kernel::MatvecPairs(Store::Rows, XNorm::None);
    let cpu = Offers {
        cpu_forms: true,
        ..offers(false)
    };
    let eight_wide = |shape: MatvecShape, offers: Offers| -> Vec<MatvecKernel> {
        let candidates = shape.candidates(offers).into_iter();
        candidates.filter(|k| k.slot_size == 4 && k.wide).collect()
    };
    for ty in GgmlType::ALL {
        let step = MatvecShape::of(pairs, ty, 4096, 4096).in_step(4);
        let offered = eight_wide(step, cpu);
        let quantized = !matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16);
        assert_eq!(offered.len(), if quantized { 4 } else { 0 }, "{ty}");
        let (parts, _) = block_parts(ty, true);
        for k in &offered {
            assert_eq!((k.workgroup, k.split), (64, Split::BlockParts), "{ty}: {k}");
            assert!(
                k.threads_per_row == parts || k.threads_per_row == 2 * parts,
                "{ty}: {k}"
            );
        }
        assert!(
            eight_wide(step, offers(false)).is_empty(),
            "{ty}: not on a GPU"
        );
        let one = MatvecShape::of(pairs, ty, 4096, 4096);
        assert!(eight_wide(one, cpu).is_empty(), "{ty}: not one token");
    }
}

/// Where workgroups run on a CPU, a decode step's one-token products are offered a larger slot by
/// wide parts: a plain product four rows, a pair product two pairs, one or two groups of a block's
/// threads a row, both sums where the subgroup holds the row, 64 or 128 a workgroup. Not on a GPU,
/// not F32 (no wide form), not rows in groups nor a step of several tokens.
#[test]
fn larger_slots_are_a_cpu_form_of_one_token_products() {
    let cpu = Offers {
        cpu_forms: true,
        ..offers(false)
    };
    let larger = |shape: &MatvecShape, offers: Offers| -> Vec<MatvecKernel> {
        let candidates = shape.candidates(offers).into_iter();
        let size = shape.cpu_slot_size();
        candidates.filter(|k| Some(k.slot_size) == size).collect()
    };
    let pairs = Kernel::MatvecPairs(Store::Glu(Activation::Silu), XNorm::None);
    for ty in GgmlType::ALL {
        let plain = MatvecShape::of(Kernel::Matvec, ty, 4096, 4096);
        let pair = MatvecShape::of(pairs, ty, 4096, 2 * 11008);
        for (shape, rows) in [(plain, 4), (pair, 4)] {
            let offered = larger(&shape, cpu);
            let wanted = if ty == GgmlType::F32 { 0 } else { 8 };
            assert_eq!(offered.len(), wanted, "{}", shape.key());
            let (parts, _) = block_parts(ty, true);
            for k in &offered {
                assert!(k.wide && k.split == Split::BlockParts, "{k}");
                assert!([64, 128].contains(&k.workgroup), "{k}");
                assert!([parts, 2 * parts].contains(&k.threads_per_row), "{k}");
                let key = PipelineKey::matvec(&shape, *k);
                assert_eq!(key.rows_per_slot(), rows, "{}: {k}", shape.key());
            }
            assert!(larger(&shape, offers(true)).is_empty(), "not on a GPU");
        }
    }
    let q4_k = |kernel| MatvecShape::of(kernel, GgmlType::Q4_K, 4096, 4096);
    assert_eq!(q4_k(Kernel::Matvec).cpu_slot_size(), Some(4));
    assert_eq!(q4_k(pairs).cpu_slot_size(), Some(2));
    assert_eq!(q4_k(pairs).in_step(4).cpu_slot_size(), None);
    assert_eq!(per_head_rows().cpu_slot_size(), None);
    let experts = q4_k(Kernel::MatvecId);
    assert_eq!(experts.cpu_slot_size(), None);
}
