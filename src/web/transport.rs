//! HTTP over `fetch` through gloo-net. The timeout is the browser's own `AbortSignal.timeout()`;
//! a failed fetch is a timeout exactly when that signal has aborted.

use gloo_net::http::{Method as HttpMethod, RequestBuilder};

use crate::core::ports::{HttpRequest, HttpResponse, LocalBoxFuture, Method, Transport, TransportError};

pub struct FetchTransport {
    pub timeout_ms: u32,
}

fn method(m: Method) -> HttpMethod {
    match m {
        Method::Get => HttpMethod::GET,
        Method::Post => HttpMethod::POST,
        Method::Put => HttpMethod::PUT,
        Method::Patch => HttpMethod::PATCH,
        Method::Delete => HttpMethod::DELETE,
    }
}

/// A timeout when our own timeout signal fired (its reason is the `TimeoutError` it aborted
/// with), whatever words the browser chose for the rejection.
fn failure(e: gloo_net::Error, signal: &web_sys::AbortSignal) -> TransportError {
    if signal.aborted() {
        TransportError::Timeout
    } else {
        TransportError::Network(match e {
            // The browser's own words; gloo's Display would bring its formatting along.
            gloo_net::Error::JsError(js) => [js.name.as_str(), ": ", js.message.as_str()].concat(),
            gloo_net::Error::GlooError(words) => words,
        })
    }
}

async fn send(request: HttpRequest, signal: &web_sys::AbortSignal) -> Result<HttpResponse, gloo_net::Error> {
    let mut builder = RequestBuilder::new(&request.url).method(method(request.method)).abort_signal(Some(signal));
    if let Some(token) = &request.bearer {
        builder = builder.header("Authorization", &["Bearer ", token].concat());
    }
    let built = match request.body {
        Some(body) => builder.header("Content-Type", "application/json").body(body)?,
        None => builder.build()?,
    };
    let response = built.send().await?;
    let status = response.status();
    let body = response.text().await?;
    Ok(HttpResponse { status, body })
}

impl Transport for FetchTransport {
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        let timeout_ms = self.timeout_ms;
        Box::pin(async move {
            let signal = web_sys::AbortSignal::timeout_with_u32(timeout_ms);
            send(request, &signal).await.map_err(|e| failure(e, &signal))
        })
    }
}
