//! The role → action map behind `hasPermission` and `requirePermission`.

/// The role that passes every action.
pub const SUPER_ROLE: &str = "sys_admin";

/// Declares each action once: the constant, its doc comment, and its entry in `ALL`.
macro_rules! actions {
    ($($(#[doc = $doc:literal])+ $name:ident = $text:literal;)+) => {
        $($(#[doc = $doc])+ pub const $name: &str = $text;)+
        /// Every action above: those the default map lists and those only `sys_admin` passes.
        /// The SDK refuses any other action unless the app's own map (`options.permissions`)
        /// names it; the `.d.ts` types them as `Permission` (`make types`).
        pub const ALL: &[&str] = &[$($name),+];
    };
}

actions! {
    /// The operators' views: cluster, fleet, reconciliation, candidates, topology, audit.
    ROLLING_DB_READ = "rollingDb:read";
    /// A flag change and its preflight.
    ROLLING_DB_FLAGS = "rollingDb:flags";
    /// The crons list and a run's progress.
    CRONS_READ = "crons:read";
    /// Starting a cron.
    CRONS_RUN = "crons:run";
    /// Invalidating a tenant's devices.
    CLIENTS_INVALIDATE = "clients:invalidate";
    /// A tenant's device losses: reading its open loss reports and acknowledging those reviewed
    /// (one action, so whoever acknowledges may read what they acknowledge).
    ROLLING_DB_LOSSES = "rollingDb:losses";
    /// Writes to CORE, the STATIC catalogue, through the document proxy.
    CATALOG_WRITE = "catalog:write";
    /// Re-warm (dropping CORE): in no role's list, so `sys_admin` alone.
    ROLLING_DB_REWARM = "rollingDb:rewarm";
    /// Switching a flag on past its failed prerequisites (`?force=true`): in no role's list, so `sys_admin` alone.
    ROLLING_DB_FORCE = "rollingDb:force";
    /// Releasing a held (restored) day database to the drop: in no role's list, so `sys_admin` alone.
    ROLLING_DB_RELEASE = "rollingDb:release";
    /// Deleting a company (one with nothing left in it): in no role's list, so `sys_admin` alone.
    COMPANIES_DELETE = "companies:delete";
    /// Deleting a user (its sessions end first): in no role's list, so `sys_admin` alone.
    USERS_DELETE = "users:delete";
}

/// The default map (docs/sdk.md, `hasPermission`), action → roles. The mock server authorises its routes by this
/// same map, so `hasPermission` and the server never disagree.
pub const DEFAULTS: [(&str, &[&str]); 7] = [
    (ROLLING_DB_READ, &["sys_admin"]),
    (ROLLING_DB_FLAGS, &["sys_admin", "key_manager"]),
    (CRONS_READ, &["sys_admin"]),
    (CRONS_RUN, &["sys_admin", "key_manager"]),
    (CLIENTS_INVALIDATE, &["sys_admin", "key_manager"]),
    (ROLLING_DB_LOSSES, &["sys_admin", "key_manager"]),
    (CATALOG_WRITE, &["sys_admin", "manager"]),
];

/// The roles above a manager's: only `sys_admin` manages the users who hold them.
pub const ABOVE_MANAGER: [&str; 2] = [SUPER_ROLE, "key_manager"];

/// Whether a caller holding `caller` may end the sessions of a user holding `target` (delete a
/// device of theirs, in the caller's company; `own`: the device is the caller's): everyone their
/// own, `sys_admin` anyone's, a `manager` those of users holding no role above a manager's. A caller
/// never ends the sessions of a user it may not manage.
pub fn may_end_sessions_of(caller: &[String], target: &[String], own: bool) -> bool {
    let holds = |roles: &[String], role: &str| roles.iter().any(|r| r == role);
    own || holds(caller, SUPER_ROLE)
        || (holds(caller, "manager") && !ABOVE_MANAGER.iter().any(|above| holds(target, above)))
}

/// The defaults, with `options.permissions` merged over them (an override replaces an action's roles).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PermissionMap {
    overrides: Vec<(String, Vec<String>)>,
}

impl PermissionMap {
    /// The defaults with `options.permissions` over them.
    pub fn with_overrides(overrides: Vec<(String, Vec<String>)>) -> Self {
        PermissionMap { overrides }
    }

    /// Whether the app's own map (`options.permissions`) names `action`.
    pub fn names(&self, action: &str) -> bool {
        self.overrides.iter().any(|(a, _)| a == action)
    }

    /// `sys_admin` passes every action; an unknown action is refused to everyone else.
    pub fn allows(&self, action: &str, roles: &[String]) -> bool {
        if roles.iter().any(|r| r == SUPER_ROLE) {
            return true;
        }
        let holds = |allowed: &str| roles.iter().any(|r| r == allowed);
        match self.overrides.iter().rev().find(|(a, _)| a == action) {
            Some((_, allowed)) => allowed.iter().any(|a| holds(a)),
            None => {
                DEFAULTS.iter().find(|(a, _)| *a == action).is_some_and(|(_, allowed)| allowed.iter().any(|a| holds(a)))
            }
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    fn roles(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn default_map() {
        let m = PermissionMap::default();
        assert!(m.allows("rollingDb:read", &roles(&["sys_admin"])));
        assert!(!m.allows("rollingDb:read", &roles(&["key_manager"])));
        assert!(m.allows("rollingDb:flags", &roles(&["key_manager"])));
        assert!(m.allows("crons:run", &roles(&["key_manager"])));
        assert!(!m.allows("crons:read", &roles(&["key_manager"])));
        assert!(m.allows("clients:invalidate", &roles(&["key_manager"])));
        assert!(!m.allows("crons:run", &roles(&["cashier"])));
        assert!(!m.allows("crons:run", &[]));
    }

    #[test]
    fn unknown_action_is_false_and_sys_admin_passes_all() {
        let m = PermissionMap::default();
        assert!(!m.allows("orders:void", &roles(&["cashier", "manager"])));
        assert!(m.allows("orders:void", &roles(&["sys_admin"])));
    }

    /// docs/sdk.md's table of the default map, as `DEFAULTS` and `ALL` make it.
    fn documented_map() -> String {
        let mut table = String::from("| action | roles |\n|---|---|\n");
        for action in ALL {
            let roles = match DEFAULTS.iter().find(|(a, _)| a == action) {
                Some((_, roles)) => roles.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", "),
                None => format!("`{SUPER_ROLE}` alone"),
            };
            table.push_str(&format!("| `{action}` | {roles} |\n"));
        }
        table
    }

    #[test]
    fn the_sdk_docs_list_the_default_map() {
        // This file is compiled in the protocol crate and in the SDK's: docs/ is beside either.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let doc = [root.join("docs/sdk.md"), root.join("../docs/sdk.md")].into_iter().find(|p| p.exists()).unwrap();
        let text = std::fs::read_to_string(doc).unwrap();
        let want = documented_map();
        assert!(text.contains(&want), "docs/sdk.md must hold the default map as it is:\n{want}");
    }

    #[test]
    fn every_action_is_listed_once_and_the_app_s_own_are_named() {
        for (action, _) in DEFAULTS {
            assert!(ALL.contains(&action), "{action}");
        }
        let mut all = ALL.to_vec();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), ALL.len());
        let m = PermissionMap::with_overrides(vec![("orders:void".to_string(), roles(&["manager"]))]);
        assert!(m.names("orders:void") && !m.names("crons:run") && !PermissionMap::default().names("orders:void"));
    }

    #[test]
    fn overrides_merge_over_defaults() {
        let m = PermissionMap::with_overrides(vec![
            ("orders:void".to_string(), roles(&["manager"])),
            ("crons:read".to_string(), roles(&["auditor"])),
        ]);
        assert!(m.allows("orders:void", &roles(&["manager"])));
        assert!(m.allows("crons:read", &roles(&["auditor"])));
        assert!(m.allows("rollingDb:flags", &roles(&["key_manager"])), "untouched default kept");
        assert!(!m.allows("crons:read", &roles(&["sys_admin_not"])), "an override replaces the default roles");
    }
}
