"""Makes tests/data/random-llama-chat.gguf: random-llama-q6_k.gguf with a ChatML chat template, so the
browser tests can drive the chat API with a model that answers in milliseconds. Its replies are noise;
the tests check the API's shapes, streaming and cancellation with it, never the words.

Run with the gguf package: python tests/goldens/make_random_llama_chat.py
"""
import gguf

SRC = "tests/data/random-llama-q6_k.gguf"
DST = "tests/data/random-llama-chat.gguf"
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

reader = gguf.GGUFReader(SRC)
writer = gguf.GGUFWriter(DST, arch="llama")
for field in reader.fields.values():
    if field.name.startswith("GGUF.") or field.name == "general.architecture":
        continue
    value = field.contents()
    vtype = field.types[0]
    if vtype == gguf.GGUFValueType.ARRAY:
        writer.add_key_value(field.name, value, vtype, sub_type=field.types[-1])
    else:
        writer.add_key_value(field.name, value, vtype)
writer.add_chat_template(CHATML)
for t in reader.tensors:
    writer.add_tensor(t.name, t.data, raw_shape=t.data.shape, raw_dtype=t.tensor_type)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
print("wrote", DST)
