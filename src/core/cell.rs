//! `RefCell` with one panic location for all its borrows: std's borrows are `#[track_caller]`,
//! so each call site carried its own location record and panic call in the module (a double
//! borrow is a bug either way; only where it is reported changes).

use std::cell::{Ref, RefMut};

/// A `std::cell::RefCell` whose `borrow`/`borrow_mut` are not `#[track_caller]`.
#[derive(Debug, Default)]
pub struct RefCell<T>(std::cell::RefCell<T>);

impl<T> RefCell<T> {
    /// A cell holding `value`.
    pub const fn new(value: T) -> Self {
        RefCell(std::cell::RefCell::new(value))
    }

    /// `std::cell::RefCell::borrow`.
    pub fn borrow(&self) -> Ref<'_, T> {
        self.0.borrow()
    }

    /// `std::cell::RefCell::borrow_mut`.
    pub fn borrow_mut(&self) -> RefMut<'_, T> {
        self.0.borrow_mut()
    }
}
