//! The role → action map behind `hasPermission` and `requirePermission`.

use std::collections::BTreeMap;

/// The role that passes every action.
pub const SUPER_ROLE: &str = "sys_admin";

#[derive(Debug, Clone, PartialEq)]
pub struct PermissionMap(BTreeMap<String, Vec<String>>);

impl Default for PermissionMap {
    fn default() -> Self {
        let map = [
            ("rollingDb:read", &["sys_admin"][..]),
            ("rollingDb:flags", &["sys_admin", "key_manager"]),
            ("crons:read", &["sys_admin"]),
            ("crons:run", &["sys_admin", "key_manager"]),
            ("clients:invalidate", &["sys_admin", "key_manager"]),
        ];
        PermissionMap(
            map.into_iter()
                .map(|(action, roles)| (action.to_owned(), roles.iter().map(|r| r.to_string()).collect()))
                .collect(),
        )
    }
}

impl PermissionMap {
    /// The default map with `overrides` merged over it (an override replaces an action's roles).
    pub fn with_overrides(overrides: BTreeMap<String, Vec<String>>) -> Self {
        let mut map = PermissionMap::default();
        map.0.extend(overrides);
        map
    }

    /// `sys_admin` passes every action; an unknown action is refused to everyone else.
    pub fn allows(&self, action: &str, roles: &[String]) -> bool {
        if roles.iter().any(|r| r == SUPER_ROLE) {
            return true;
        }
        self.0.get(action).is_some_and(|allowed| roles.iter().any(|r| allowed.contains(r)))
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
        let mut o = BTreeMap::new();
        o.insert("orders:void".to_string(), roles(&["manager"]));
        o.insert("crons:read".to_string(), roles(&["auditor"]));
        let m = PermissionMap::with_overrides(o);
        assert!(m.allows("orders:void", &roles(&["manager"])));
        assert!(m.allows("crons:read", &roles(&["auditor"])));
        assert!(m.allows("rollingDb:flags", &roles(&["key_manager"])), "untouched default kept");
    }
}
