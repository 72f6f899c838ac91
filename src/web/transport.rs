//! HTTP over `fetch` through gloo-net, with a timeout that aborts the request.

use std::cell::Cell;
use std::rc::Rc;

use gloo_net::http::{Method as HttpMethod, RequestBuilder};
use gloo_timers::callback::Timeout;

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

impl Transport for FetchTransport {
    fn send(&self, request: HttpRequest) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        let timeout_ms = self.timeout_ms;
        Box::pin(async move {
            let network = |e: gloo_net::Error| TransportError::Network(e.to_string());
            let controller = web_sys::AbortController::new().map_err(|e| TransportError::Network(crate::js::errors::describe(&e)))?;
            let mut builder = RequestBuilder::new(&request.url).method(method(request.method)).abort_signal(Some(&controller.signal()));
            if let Some(token) = &request.bearer {
                builder = builder.header("Authorization", &format!("Bearer {token}"));
            }
            let built = match request.body {
                Some(body) => builder.header("Content-Type", "application/json").body(body),
                None => builder.build(),
            }
            .map_err(network)?;
            let timed_out = Rc::new(Cell::new(false));
            let flag = timed_out.clone();
            // Dropping the timer (on every path out of this block) cancels it.
            let _timer = Timeout::new(timeout_ms, move || {
                flag.set(true);
                controller.abort();
            });
            let outcome = async {
                let response = built.send().await?;
                let status = response.status();
                let body = response.text().await?;
                Ok::<_, gloo_net::Error>(HttpResponse { status, body })
            }
            .await;
            outcome.map_err(|e| if timed_out.get() { TransportError::Timeout } else { network(e) })
        })
    }
}
