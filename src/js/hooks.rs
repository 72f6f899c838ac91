//! JS functions as core hook handlers, and the unsubscribe functions handed back to JS.

use std::rc::Rc;

use js_sys::{Function, Promise};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::convert::to_js;
use super::errors::describe;
use crate::core::hooks::{Handler, HookList};

/// Calls `f(payload)` and awaits what it returns; a throw or rejection becomes an `Err`.
pub fn js_handler(f: Function) -> Handler {
    Rc::new(move |payload: &Value| {
        let returned = f.call1(&JsValue::UNDEFINED, &to_js(payload));
        Box::pin(async move {
            let value = returned.map_err(|e| describe(&e))?;
            // Promise.resolve also adopts non-Promise thenables.
            JsFuture::from(Promise::resolve(&value)).await.map(|_| ()).map_err(|e| describe(&e))
        })
    })
}

/// Registers `f` on the list `pick` selects; returns a JS function that unregisters it.
pub fn subscribe<S: 'static>(owner: S, pick: fn(&S) -> &HookList, f: Function) -> Function {
    let id = pick(&owner).register(js_handler(f));
    Closure::<dyn FnMut()>::new(move || {
        pick(&owner).unregister(id);
    })
    .into_js_value()
    .unchecked_into()
}
