// Prints an image's embeddings as llama.cpp's libmtmd makes them (its preprocessing, vision encoder and
// projector, on the CPU): one line per image token, its values separated by spaces. Built and run by
// make_random_gemma3_vision.py.
//
//     mtmd_embed TEXT_MODEL MMPROJ IMAGE

#include "llama.h"
#include "mtmd.h"
#include "mtmd-helper.h"

#include <cstdio>
#include <cstring>

int main(int argc, char ** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s TEXT_MODEL MMPROJ IMAGE\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    mtmd_context_params cp = mtmd_context_params_default();
    cp.use_gpu = false;
    cp.n_threads = 2;
    cp.warmup = false;
    mtmd_context * ctx = mtmd_init_from_file(argv[2], model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot load %s\n", argv[2]);
        return 1;
    }
    mtmd_helper_bitmap_wrapper image = mtmd_helper_bitmap_init_from_file(ctx, argv[3], false, mtmd_helper_init_opt_default());
    if (!image.bitmap) {
        fprintf(stderr, "cannot read %s\n", argv[3]);
        return 1;
    }
    mtmd_input_chunks * chunks = mtmd_input_chunks_init();
    const char * prompt = mtmd_default_marker();
    mtmd_input_text text = {prompt, strlen(prompt), false, true};
    const mtmd_bitmap * bitmaps[] = {image.bitmap};
    if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) {
        fprintf(stderr, "mtmd_tokenize failed\n");
        return 1;
    }
    const int n_embd = llama_model_n_embd_inp(model);
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); i++) {
        const mtmd_input_chunk * chunk = mtmd_input_chunks_get(chunks, i);
        if (mtmd_input_chunk_get_type(chunk) != MTMD_INPUT_CHUNK_TYPE_IMAGE) {
            continue;
        }
        if (mtmd_encode_chunk(ctx, chunk) != 0) {
            fprintf(stderr, "mtmd_encode_chunk failed\n");
            return 1;
        }
        const float * embd = mtmd_get_output_embd(ctx);
        const size_t n_tokens = mtmd_input_chunk_get_n_tokens(chunk);
        for (size_t t = 0; t < n_tokens; t++) {
            for (int j = 0; j < n_embd; j++) {
                printf(j ? " %.7g" : "%.7g", embd[t * n_embd + j]);
            }
            printf("\n");
        }
    }
    mtmd_input_chunks_free(chunks);
    mtmd_free(ctx);
    llama_model_free(model);
    return 0;
}
