//! Every name that crosses the wire or the process boundary, in one place, shared by the SDK and
//! the mock server: the routes (`routes.rs`), the request and answer bodies (`auth.rs`, `views.rs`,
//! `records.rs`; docs/server.md lists the routes), the sync socket's frames and close codes
//! (`sync_frames.rs`), the cron names and schedules, the audit actions, the error codes, and the SDK
//! versions. The server reads and writes the bodies through these structs; the SDK, which carries
//! no serde serialiser, writes them with the builders beside them, tested to agree.

#![warn(missing_docs)]

/// Declares an enum whose variants cross the wire by name: each variant's name written once, for
/// serde (and ts-rs, which follows serde's names), `ALL`, `as_str` and `parse`.
macro_rules! named {
    ($(#[doc = $doc:literal])+ pub enum $name:ident {
        $($(#[doc = $vdoc:literal])+ $variant:ident = $text:literal,)+
    }) => {
        $(#[doc = $doc])+
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "ts", derive(ts_rs::TS))]
        pub enum $name {
            $($(#[doc = $vdoc])+ #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name on the wire and in the store.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The value named `s`, if any.
            pub fn parse(s: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|v| v.as_str() == s)
            }
        }
    };
}

mod auth;
pub mod cluster;
#[macro_use]
pub mod errors;
pub mod json;
pub mod losses;

pub mod ops;
pub mod permissions;
pub mod records;
pub mod routes;
pub mod sync_frames;
#[cfg(feature = "ts")]
pub mod typescript;
pub mod views;

pub use auth::*;
pub use cluster::{DatabaseKind, DayStatus};

/// The version the SDK reports in `deviceInfo.sdkVersion` and `sdk:init`: this crate's.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The first SDK with the catalogue cutover switch ("SDK 1.4.17"): a tenant may turn
/// `rollingDb` on only when its devices report this or later, and only such devices route to CORE.
pub const CUTOVER_SDK_VERSION: &str = "1.4.17";

/// `major.minor.patch` of a version string (`v` prefix and `-`/`+` suffixes ignored; missing
/// parts are 0; anything unreadable is `None`).
pub fn parse_version(v: &str) -> Option<(u64, u64, u64)> {
    let core = v.trim().trim_start_matches('v').split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next().unwrap_or(Some(0))?, parts.next().unwrap_or(Some(0))?))
}

/// Whether `version` is a readable version older than the cutover switch: what the preflight
/// refuses `rollingDb` for, and what the console marks "too old" (an unreadable or absent version
/// is not known to be older).
pub fn predates_cutover(version: Option<&str>) -> bool {
    version.and_then(parse_version).is_some() && !has_cutover_switch(version)
}

/// Whether `version` has the cutover switch; an unreadable or absent version has not.
pub fn has_cutover_switch(version: Option<&str>) -> bool {
    match (version.and_then(parse_version), parse_version(CUTOVER_SDK_VERSION)) {
        (Some(v), Some(cutover)) => v >= cutover,
        _ => false,
    }
}
