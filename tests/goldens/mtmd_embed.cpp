// What llama.cpp's libmtmd makes of an image prompt, on the CPU: the images' embeddings (their
// preprocessing, vision encoder and projector), then the prompt PROMPT (an image at each of mtmd's
// markers, BOS added, special tokens parsed) read by the text model and N_GREEDY tokens of its greedy
// reply. IMAGES is one image file, or several separated by commas, in the markers' order.
// IMAGE_MIN_TOKENS and IMAGE_MAX_TOKENS, where given and positive, replace the projector's token budget of
// an image, as llama.cpp's --image-min-tokens and --image-max-tokens do; -1 (the default) keeps its own.
// Built and run (vision_goldens.llama_cpp_run) by make_random_gemma3_vision.py, make_random_gemma4_vision.py
// and make_random_qwen35_vision.py.
// Prints lines of space-separated values:
//   embd v...        one per image token, the images in order
//   prompt id...     the prompt's tokens, -1 for each image token
//   logits v...      the logits after the prompt
//   greedy id gap    one per reply token: its id and the gap between the top two logits
//
//     mtmd_embed TEXT_MODEL MMPROJ IMAGES PROMPT N_GREEDY [IMAGE_MIN_TOKENS [IMAGE_MAX_TOKENS]]

#include "llama.h"
#include "mtmd.h"
#include "mtmd-helper.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char ** argv) {
    if (argc < 6 || argc > 8) {
        fprintf(stderr, "usage: %s TEXT_MODEL MMPROJ IMAGES PROMPT N_GREEDY [IMAGE_MIN_TOKENS [IMAGE_MAX_TOKENS]]\n", argv[0]);
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
    cp.image_min_tokens = argc > 6 ? atoi(argv[6]) : -1;
    cp.image_max_tokens = argc > 7 ? atoi(argv[7]) : -1;
    mtmd_context * ctx = mtmd_init_from_file(argv[2], model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot load %s\n", argv[2]);
        return 1;
    }
    std::vector<mtmd_helper_bitmap_wrapper> images;
    std::vector<const mtmd_bitmap *> bitmaps;
    std::string paths = argv[3];
    for (size_t start = 0; start <= paths.size();) {
        size_t end = std::min(paths.find(',', start), paths.size());
        std::string path = paths.substr(start, end - start);
        images.push_back(mtmd_helper_bitmap_init_from_file(ctx, path.c_str(), false, mtmd_helper_init_opt_default()));
        if (!images.back().bitmap) {
            fprintf(stderr, "cannot read %s\n", path.c_str());
            return 1;
        }
        bitmaps.push_back(images.back().bitmap);
        start = end + 1;
    }
    mtmd_input_chunks * chunks = mtmd_input_chunks_init();
    const char * prompt = argv[4];
    mtmd_input_text text = {prompt, strlen(prompt), true, true};
    if (mtmd_tokenize(ctx, chunks, &text, bitmaps.data(), bitmaps.size()) != 0) {
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
            printf("embd");
            for (int j = 0; j < n_embd; j++) {
                printf(" %.7g", embd[t * n_embd + j]);
            }
            printf("\n");
        }
    }
    printf("prompt");
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); i++) {
        const mtmd_input_chunk * chunk = mtmd_input_chunks_get(chunks, i);
        if (mtmd_input_chunk_get_type(chunk) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
            size_t n = 0;
            const llama_token * ids = mtmd_input_chunk_get_tokens_text(chunk, &n);
            for (size_t t = 0; t < n; t++) {
                printf(" %d", ids[t]);
            }
        } else {
            for (size_t t = 0; t < mtmd_input_chunk_get_n_tokens(chunk); t++) {
                printf(" -1");
            }
        }
    }
    printf("\n");

    // The whole prompt in one batch, so the image's tokens are one ubatch (Gemma 3's see each other).
    llama_context_params lp = llama_context_default_params();
    lp.n_ctx = 128;
    lp.n_batch = 128;
    lp.n_ubatch = 128;
    lp.n_threads = 2;
    lp.n_threads_batch = 2;
    llama_context * lctx = llama_init_from_model(model, lp);
    llama_pos n_past = 0;
    if (mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, 128, true, &n_past) != 0) {
        fprintf(stderr, "mtmd_helper_eval_chunks failed\n");
        return 1;
    }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    for (int step = 0; step < atoi(argv[5]); step++) {
        const float * logits = llama_get_logits_ith(lctx, -1);
        if (step == 0) {
            printf("logits");
            for (int j = 0; j < n_vocab; j++) {
                printf(" %.7g", logits[j]);
            }
            printf("\n");
        }
        std::vector<float> sorted(logits, logits + n_vocab);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
        llama_token best = (llama_token) (std::max_element(logits, logits + n_vocab) - logits);
        printf("greedy %d %.6g\n", best, sorted[0] - sorted[1]);
        llama_batch next = llama_batch_get_one(&best, 1);
        if (llama_decode(lctx, next) != 0) {
            fprintf(stderr, "llama_decode failed\n");
            return 1;
        }
    }
    llama_free(lctx);
    mtmd_input_chunks_free(chunks);
    mtmd_free(ctx);
    llama_model_free(model);
    return 0;
}
