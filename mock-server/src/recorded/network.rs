//! What the network between a replica and what it depends on does: connections to the document
//! engine and to PostgreSQL that failed, and requests sent again after one did. A replica that
//! cannot reach either shows it here before its devices do.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// What a replica depends on across the network.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Upstream {
    /// The document engine (`DOCDB_URL`).
    Engine,
    /// The store (`DATABASE_URL`).
    Postgres,
}

impl Upstream {
    fn as_str(self) -> &'static str {
        match self {
            Upstream::Engine => "engine",
            Upstream::Postgres => "postgres",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Label {
    /// `engine` or `postgres`.
    upstream: &'static str,
}

pub struct Series {
    failures: Family<Label, Counter>,
    retries: Family<Label, Counter>,
}

impl Series {
    pub fn register(registry: &mut Registry) -> Series {
        let series = Series { failures: Family::default(), retries: Family::default() };
        // Both told from the start, at 0: a rate over a series that appears only with the first
        // failure would miss it.
        for upstream in [Upstream::Engine, Upstream::Postgres] {
            let label = Label { upstream: upstream.as_str() };
            let _ = series.failures.get_or_create(&label);
            let _ = series.retries.get_or_create(&label);
        }
        registry.register(
            "upstream_connection_failures",
            "Connections to the engine or PostgreSQL that could not be made or broke before an answer, by upstream",
            series.failures.clone(),
        );
        registry.register(
            "upstream_retries",
            "Requests sent again (on a fresh connection) after a connection failed, by upstream",
            series.retries.clone(),
        );
        series
    }

    pub fn failed(&self, upstream: Upstream) {
        self.failures.get_or_create(&Label { upstream: upstream.as_str() }).inc();
    }

    pub fn retried(&self, upstream: Upstream) {
        self.retries.get_or_create(&Label { upstream: upstream.as_str() }).inc();
    }
}
