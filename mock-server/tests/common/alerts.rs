//! The repository's alert rules fed one scrape: a `promtool test rules` case whose input series are
//! the scrape's series, each held at its scraped value, and whose expectation is the caller's (a
//! PromQL expression over what the rules made of them, `ALERTS` among it).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The firing alerts that ask an operator to act, one sample a step (`group by (step)`).
pub const STEPS_FIRING: &str = r#"group by (step) (ALERTS{alertstate="firing", step!=""})"#;

/// The scrape's samples as promtool's input series: `(series, value)`, each line of the classic
/// text format that is not a comment (a label value may hold spaces: the value is after the last).
fn samples(scrape: &str) -> Vec<(&str, f64)> {
    scrape
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let value: f64 = value.parse().ok()?;
            value.is_finite().then_some((series, value))
        })
        .collect()
}

/// Runs the alert rules over `scrape`'s series (held for five minutes) and checks that `expr`,
/// evaluated at the fifth, answers exactly `expected` (`(labels, value)`, labels as promtool
/// writes them: `{step="roll-back"}`). `Err` holds promtool's account of what it got instead.
pub fn expect_after_scrape(scrape: &str, expr: &str, expected: &[(String, f64)]) -> Result<(), String> {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let mut test = format!(
        "rule_files:\n  - {}\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n",
        quote(&rules().display().to_string())
    );
    for (series, value) in samples(scrape) {
        test.push_str(&format!("      - series: {}\n        values: '{value}x5'\n", quote(series)));
    }
    test.push_str(&format!("    promql_expr_test:\n      - expr: {}\n        eval_time: 5m\n", quote(expr)));
    if expected.is_empty() {
        test.push_str("        exp_samples: []\n");
    } else {
        test.push_str("        exp_samples:\n");
        for (labels, value) in expected {
            test.push_str(&format!("          - labels: {}\n            value: {value}\n", quote(labels)));
        }
    }
    let dir = std::env::temp_dir().join(format!("alerts-{}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("scraped_test.yml");
    std::fs::write(&file, &test).unwrap();
    let out = Command::new("promtool")
        .args(["test", "rules"])
        .arg(&file)
        .output()
        .expect("promtool runs: make setup installs it");
    let _ = std::fs::remove_dir_all(&dir);
    if out.status.success() {
        return Ok(());
    }
    Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn rules() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("prometheus/alerts.yml")
}

fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
