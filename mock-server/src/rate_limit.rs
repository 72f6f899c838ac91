//! A per-address rate limit on the sign-in routes (`/auth*`, `/register-user`), where guessing
//! passwords and minting sessions happen: tower_governor's token bucket, keyed by the peer
//! address the connection came from (never a forwarding header, which the client writes). A
//! refused request gets 429 with the error body and `Retry-After`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use axum::response::IntoResponse;
use axum::Router;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::KeyExtractor;
use tower_governor::{GovernorError, GovernorLayer};

use crate::error::{AppError, Cause};
use crate::settings::Settings;
use crate::state::AppState;

/// The peer address; an in-process server started without connection info counts as one peer.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddress;

impl KeyExtractor for PeerAddress {
    type Key = IpAddr;

    fn extract<T>(&self, req: &Request<T>) -> Result<IpAddr, GovernorError> {
        Ok(req.extensions().get::<ConnectInfo<SocketAddr>>().map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |c| c.0.ip()))
    }
}

/// The limiter's refusal, rendered by the server's one error type.
fn refused(e: GovernorError) -> Response<Body> {
    match e {
        GovernorError::TooManyRequests { wait_time, .. } => AppError::TooMany {
            code: protocol::errors::RATE_LIMITED,
            message: "too many sign-in requests from this address; wait and try again".into(),
            retry_after_secs: Some(wait_time.max(1)),
        },
        other => AppError::Internal(Cause::msg(["the rate limiter failed: ", &other.to_string()].concat())),
    }
    .into_response()
}

/// `router` behind the limit of `settings` (`AUTH_RATE_PER_MIN`, `AUTH_RATE_BURST`); unchanged
/// when the limit is off (0).
pub fn limit(router: Router<AppState>, settings: &Settings) -> Router<AppState> {
    if settings.auth_rate_per_min == 0 {
        return router;
    }
    let period = Duration::from_millis(60_000 / u64::from(settings.auth_rate_per_min).max(1));
    let Some(config) = GovernorConfigBuilder::default()
        .key_extractor(PeerAddress)
        .period(period)
        .burst_size(settings.auth_rate_burst.max(1))
        .finish()
    else {
        return router;
    };
    let config = Arc::new(config);
    // Forget addresses whose bucket is full again, so the table stays as small as the traffic.
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let limiter = Arc::downgrade(&config);
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(60)).await;
                let Some(config) = limiter.upgrade() else { return };
                config.limiter().retain_recent();
            }
        });
    }
    router.layer(GovernorLayer::new(config).error_handler(refused))
}
