//! The TypeScript the protocol's types declare (written by ts-rs from the types themselves), for
//! the package's `.d.ts`: the mock server's tests check the package's declarations against it.

use ts_rs::TS;

use super::losses::{
    AcknowledgeLosses, LossReason, LossRecorded, LossReport, LossesAcknowledged, StoredLoss, TenantLosses,
};
use super::records::*;
use super::routes;
use super::sync_frames::{InvalidateLocal, Ready, Routing};
use super::views::*;
use super::{errors, DatabaseKind, DayStatus, OkBody, StatusRecorded};

/// The union of string literals `name` (one per line).
pub fn union(name: &str, members: &[&str]) -> String {
    let lines: Vec<String> = members.iter().map(|m| format!("  | \"{m}\"")).collect();
    format!("export type {name} =\n{};", lines.join("\n"))
}

/// `T`'s declaration, exported, after its doc comment, laid out as a person would write it.
fn exported<T: TS>() -> String {
    format!("{}export {}", doc("", &T::docs().unwrap_or_default()), object_per_line(&T::decl()))
}

/// A doc comment as ts-rs writes it (`/**`, ` * line`…, ` */`), indented by `indent`: one line
/// as `/** line */`, more as a block.
fn doc(indent: &str, comment: &str) -> String {
    let lines: Vec<&str> = comment
        .lines()
        .map(|l| l.trim().trim_start_matches("/**").trim_end_matches("*/").trim_start_matches('*').trim())
        .filter(|l| !l.is_empty())
        .collect();
    match lines.as_slice() {
        [] => String::new(),
        [one] => format!("{indent}/** {one} */\n"),
        many => {
            let body: String = many.iter().map(|l| format!("{indent} * {l}\n")).collect();
            format!("{indent}/**\n{body}{indent} */\n")
        }
    }
}

/// `type X = { … };` with each member on its own line, after its doc comment, `;`-terminated;
/// any other declaration as it is. ts-rs writes an object's members on one line.
fn object_per_line(decl: &str) -> String {
    let (Some(open), Some(close)) = (decl.find("= {"), decl.rfind("};")) else { return decl.to_owned() };
    let mut out = format!("{}= {{\n", &decl[..open]);
    for member in members(&decl[open + 3..close]) {
        let (comment, field) = match member.rfind("*/") {
            Some(end) => (&member[..end + 2], member[end + 2..].trim()),
            None => ("", member.as_str()),
        };
        out += &format!("{}  {};\n", doc("  ", comment), field.trim_end_matches(',').trim());
    }
    out + "};"
}

/// An object type's body split at its members' commas: those outside comments, strings and
/// nested brackets.
fn members(body: &str) -> Vec<String> {
    let (mut out, mut current, mut depth) = (Vec::new(), String::new(), 0i32);
    let (mut in_comment, mut in_string) = (false, false);
    let chars: Vec<char> = body.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        current.push(c);
        if in_comment {
            in_comment = !(c == '/' && i > 0 && chars[i - 1] == '*');
        } else if in_string {
            in_string = c != '"';
        } else {
            match c {
                '/' if next == Some('*') => in_comment = true,
                '"' => in_string = true,
                '{' | '[' | '(' | '<' => depth += 1,
                '}' | ']' | ')' | '>' => depth -= 1,
                ',' if depth == 0 => out.push(std::mem::take(&mut current)),
                _ => {}
            }
        }
    }
    out.push(current);
    out.into_iter().map(|m| m.trim().to_owned()).filter(|m| !m.is_empty()).collect()
}

/// An interface from each row's name to its type, so a declaration names the row, not the type.
fn by_row(name: &str, comment: &str, rows: Vec<(&str, String)>) -> String {
    let members: String = rows.iter().map(|(row, ty)| format!("  {row}: {ty};\n")).collect();
    format!("/** {comment} */\nexport interface {name} {{\n{members}}}")
}

/// Every declaration the protocol owns, each exported.
pub fn declarations() -> Vec<String> {
    vec![
        exported::<DatabaseKind>(),
        exported::<DayStatus>(),
        exported::<AlarmKind>(),
        exported::<RollbackAlarm>(),
        exported::<OperatorStep>(),
        exported::<AttentionStep>(),
        exported::<Attention>(),
        exported::<TenantAttention>(),
        exported::<ClusterDatabase>(),
        exported::<ClusterView>(),
        exported::<TenantDevice>(),
        exported::<TenantSummary>(),
        exported::<TenantsView>(),
        exported::<RunStatus>(),
        exported::<CronInfo>(),
        exported::<CronsView>(),
        exported::<CronRunStarted>(),
        exported::<Progress>(),
        exported::<CronRun>(),
        exported::<HealthState>(),
        exported::<HealthStatus>(),
        exported::<InvalidationResult>(),
        exported::<TypeCheck>(),
        exported::<LegacyArchive>(),
        exported::<ReconciliationDay>(),
        exported::<Reconciliation>(),
        exported::<CleanupCandidate>(),
        exported::<CleanupCandidates>(),
        exported::<Routing>(),
        exported::<Ready>(),
        exported::<InvalidateLocal>(),
        exported::<DatabaseSummary>(),
        exported::<AfterDrop>(),
        exported::<DayDatabase>(),
        exported::<DayManifest>(),
        exported::<TenantInvalidation>(),
        exported::<Topology>(),
        exported::<PreflightCheck>(),
        exported::<FlagPreflight>(),
        exported::<Preflight>(),
        exported::<FlagChanges>(),
        exported::<FlagRecord>(),
        exported::<CoreWrites>(),
        exported::<FlagsChanged>(),
        exported::<TenantCoreWrites>(),
        exported::<OkBody>(),
        exported::<StatusRecorded>(),
        exported::<LossReason>(),
        exported::<LossReport>(),
        exported::<LossRecorded>(),
        exported::<StoredLoss>(),
        exported::<TenantLosses>(),
        exported::<AcknowledgeLosses>(),
        exported::<LossesAcknowledged>(),
        exported::<RewarmRequest>(),
        exported::<Snapshot>(),
        exported::<Rewarm>(),
        exported::<DayReleased>(),
        exported::<Device>(),
        exported::<DeviceList>(),
        exported::<DeviceAnswer>(),
        exported::<CompanyRecord>(),
        exported::<CompanyList>(),
        exported::<CompanyAnswer>(),
        exported::<CompanyChanges>(),
        exported::<Sale>(),
        exported::<PaymentReference>(),
        exported::<SaleAnswer>(),
        exported::<User>(),
        exported::<UserList>(),
        exported::<UserAnswer>(),
        exported::<UserChanges>(),
        exported::<NewUserRequest>(),
        exported::<NewCompany>(),
        exported::<SignedUp>(),
        exported::<AuditEntry>(),
        exported::<AuditPage>(),
        by_row("RouteAnswers", "What each route the SDK wraps answers, by its row of the route table.", routes::answers()),
        "/** What the route of row `K` answers. */\nexport type Answer<K extends keyof RouteAnswers> = RouteAnswers[K];"
            .to_owned(),
        by_row("RouteBodies", "The body each route the SDK wraps takes, where it is typed, by its row.", routes::bodies()),
        "/** The body the route of row `K` takes. */\nexport type RequestBody<K extends keyof RouteBodies> = RouteBodies[K];"
            .to_owned(),
        format!(
            "/** The server's codes, passed through as it sent them. */\n{}",
            union("ServerErrorCode", errors::ALL)
        ),
    ]
}
