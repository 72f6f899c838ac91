//! HTTP over `fetch` through gloo-net. The timeout is the browser's own `AbortSignal.timeout()`,
//! which rejects the fetch with a `TimeoutError`.

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

fn failure(e: gloo_net::Error) -> TransportError {
    let text = e.to_string();
    if text.contains("TimeoutError") {
        TransportError::Timeout
    } else {
        TransportError::Network(text)
    }
}

async fn send(request: HttpRequest, timeout_ms: u32) -> Result<HttpResponse, gloo_net::Error> {
    let signal = web_sys::AbortSignal::timeout_with_u32(timeout_ms);
    let mut builder = RequestBuilder::new(&request.url).method(method(request.method)).abort_signal(Some(&signal));
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
        Box::pin(async move { send(request, timeout_ms).await.map_err(failure) })
    }
}
