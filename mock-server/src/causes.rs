//! An error told with its causes, once each: `error: source: source's source…`. Every error type
//! of the server names only itself in its text and hands its cause on as `source()`, so this is
//! the one place a chain is written out (logs, a cron run's log, the command line).

pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        next = cause.source();
    }
    out
}

/// `PartialEq` for an error type whose values tests compare: two errors are the same when they
/// tell the same, causes included (the sources, `io::Error` say, have no equality of their own).
#[macro_export]
macro_rules! equal_when_told {
    ($t:ty) => {
        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                $crate::causes::chain(self) == $crate::causes::chain(other)
            }
        }
    };
}
