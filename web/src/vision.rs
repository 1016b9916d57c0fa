//! Images in the browser: a vision projector read beside the model at load, and a request's images,
//! which the worker decodes with the browser's own decoder (createImageBitmap) and hands in as RGBA
//! pixels, in the order of the request's image parts.

use crate::{js_error, JsSource};
use wasm_bindgen::prelude::*;
use wick::gguf::{read_header, Header};
use wick::vision::{Image, Projector, TokenBudget};

/// The projector's header and the most tokens an image makes: what the model's prompt runs must
/// hold.
pub async fn header(source: &JsSource, budget: TokenBudget) -> Result<(Header, u32), JsValue> {
    let header = read_header(source).await.map_err(js_error)?;
    let tokens = Projector::max_tokens_in(&header, budget).map_err(js_error)?;
    Ok((header, tokens))
}

/// `[{ width, height, data: Uint8Array (RGBA) }]` as images.
pub fn images(value: JsValue) -> Result<Vec<Image>, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(Vec::new());
    }
    let array: js_sys::Array = value
        .dyn_into()
        .map_err(|_| js_error("images is an array"))?;
    array.iter().map(image).collect()
}

fn image(value: JsValue) -> Result<Image, JsValue> {
    let get = |key: &str| js_sys::Reflect::get(&value, &JsValue::from_str(key));
    let size = |key: &str| get(key).ok().and_then(|v| v.as_f64()).map(|v| v as u32);
    let (Some(width), Some(height)) = (size("width"), size("height")) else {
        return Err(js_error("an image needs width and height"));
    };
    let data = get("data")?
        .dyn_into::<js_sys::Uint8Array>()
        .map_err(|_| js_error("an image's data is a Uint8Array of RGBA"))?
        .to_vec();
    let rgb: Vec<u8> = data
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    if data.len() != rgb.len() / 3 * 4 {
        return Err(js_error("an image's data is RGBA: 4 bytes a pixel"));
    }
    Image::new(width, height, rgb).map_err(js_error)
}
