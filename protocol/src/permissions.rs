//! The role → action map behind `hasPermission` and `requirePermission`.

/// The role that passes every action.
pub const SUPER_ROLE: &str = "sys_admin";

/// The operators' views: cluster, fleet, reconciliation, candidates, topology, audit.
pub const ROLLING_DB_READ: &str = "rollingDb:read";
/// A flag change and its preflight.
pub const ROLLING_DB_FLAGS: &str = "rollingDb:flags";
/// The crons list and a run's progress.
pub const CRONS_READ: &str = "crons:read";
/// Starting a cron.
pub const CRONS_RUN: &str = "crons:run";
/// Invalidating a tenant's devices.
pub const CLIENTS_INVALIDATE: &str = "clients:invalidate";
/// Writes to CORE, the STATIC catalogue, through the document proxy.
pub const CATALOG_WRITE: &str = "catalog:write";
/// Re-warm (dropping CORE): in no role's list, so `sys_admin` alone.
pub const ROLLING_DB_REWARM: &str = "rollingDb:rewarm";
/// Switching a flag on past its failed prerequisites (`?force=true`): in no role's list, so `sys_admin` alone.
pub const ROLLING_DB_FORCE: &str = "rollingDb:force";
/// Releasing a held (restored) day database to the drop: in no role's list, so `sys_admin` alone.
pub const ROLLING_DB_RELEASE: &str = "rollingDb:release";
/// Deleting a company (one with nothing left in it): in no role's list, so `sys_admin` alone.
pub const COMPANIES_DELETE: &str = "companies:delete";
/// Deleting a user (its sessions end first): in no role's list, so `sys_admin` alone.
pub const USERS_DELETE: &str = "users:delete";

/// The default map (docs/sdk.md, `hasPermission`), action → roles. The mock server authorises its routes by this
/// same map, so `hasPermission` and the server never disagree.
pub const DEFAULTS: [(&str, &[&str]); 6] = [
    (ROLLING_DB_READ, &["sys_admin"]),
    (ROLLING_DB_FLAGS, &["sys_admin", "key_manager"]),
    (CRONS_READ, &["sys_admin"]),
    (CRONS_RUN, &["sys_admin", "key_manager"]),
    (CLIENTS_INVALIDATE, &["sys_admin", "key_manager"]),
    (CATALOG_WRITE, &["sys_admin", "manager"]),
];

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
