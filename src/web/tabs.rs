//! The browser's side of many tabs and of the proactive refresh: a `storage` listener that
//! makes the session follow what other tabs write, and the auto-refresh timer re-armed on every
//! change, on `visibilitychange` and on `online`. Every listener and timer is owned here and
//! removed on drop (`AuthManager.dispose()`).

use crate::core::cell::RefCell;
use std::rc::{Rc, Weak};

use gloo_events::EventListener;
use gloo_timers::callback::Timeout;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::spawn_local;

use crate::core::keys;
use crate::core::session::{Session, WeakSession};

pub struct Coordinator {
    session: WeakSession,
    _listeners: Vec<EventListener>,
    timer: Rc<RefCell<Option<Timeout>>>,
}

fn online() -> bool {
    web_sys::window().is_none_or(|w| w.navigator().on_line())
}

/// The timer slot; only the `Coordinator` holds it strongly, so once it is dropped no step
/// still in flight can arm a timer again.
type Slot = Weak<RefCell<Option<Timeout>>>;

/// Runs one auto-refresh step, then arms the timer for the next.
fn step(session: WeakSession, slot: Slot) {
    spawn_local(async move {
        let Some(live) = session.upgrade() else { return };
        let next = live.auto_refresh_step(online()).await;
        drop(live);
        let Some(timer) = slot.upgrade() else { return };
        let armed = next.map(|ms| {
            let (session, slot) = (session.clone(), slot.clone());
            Timeout::new(ms, move || step(session, slot))
        });
        // Replacing the slot cancels the previous timer.
        *timer.borrow_mut() = armed;
    });
}

impl Coordinator {
    pub fn start(session: &Session, auto_refresh: bool) -> Coordinator {
        let weak = session.downgrade();
        let timer: Rc<RefCell<Option<Timeout>>> = Rc::default();
        let mut listeners = Vec::new();
        if let Some(window) = web_sys::window() {
            let follower = weak.clone();
            listeners.push(EventListener::new(&window, "storage", move |event| {
                let key = event.dyn_ref::<web_sys::StorageEvent>().and_then(|e| e.key());
                // `None`: the other tab cleared the whole storage.
                if key.as_deref().is_none_or(|k| k == keys::AUTH || k == keys::REFRESH) {
                    if let Some(session) = follower.upgrade() {
                        spawn_local(async move { session.follow().await });
                    }
                }
            }));
            if auto_refresh {
                for (target, name) in [(window.clone().unchecked_into::<web_sys::EventTarget>(), "online")]
                    .into_iter()
                    .chain(window.document().map(|d| (d.unchecked_into(), "visibilitychange")))
                {
                    let (session, slot) = (weak.clone(), Rc::downgrade(&timer));
                    listeners.push(EventListener::new(&target, name, move |_| step(session.clone(), slot.clone())));
                }
                let (watched, slot) = (weak.clone(), Rc::downgrade(&timer));
                let rearm: Rc<dyn Fn()> = Rc::new(move || step(watched.clone(), slot.clone()));
                session.set_on_change(Some(rearm));
                step(weak.clone(), Rc::downgrade(&timer));
            }
        }
        Coordinator { session: weak, _listeners: listeners, timer }
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        self.timer.borrow_mut().take();
        if let Some(session) = self.session.upgrade() {
            session.set_on_change(None);
        }
    }
}
