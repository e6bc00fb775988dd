//! Conversions between `ctxpack-core`'s types and bindings generated from
//! `wit/`, written once for every generator.
//!
//! wit-bindgen (in the guest) and wasmtime's `bindgen!` (in hosts) generate
//! types of the same names and shapes from the same WIT. [`wit_conversions!`]
//! expands, in the crate that owns such bindings, [`Convert`] impls in both
//! directions between them and the core's types, so neither adapter spells
//! the mapping out by hand. Its field and case lists are written from the
//! WIT by `cargo run -p ctxpack-codegen` (`generated.rs`).

mod generated;

/// A field-for-field conversion between a core type and a generated one.
pub trait Convert<T> {
    /// The value as a `T`.
    fn convert(self) -> T;
}

macro_rules! identity {
    ($($t:ty),*) => {$(
        impl Convert<$t> for $t {
            fn convert(self) -> $t {
                self
            }
        }
    )*};
}
identity!(String, bool, u32, u64, f64);

impl<A: Convert<B>, B> Convert<Option<B>> for Option<A> {
    fn convert(self) -> Option<B> {
        self.map(Convert::convert)
    }
}

impl<A: Convert<B>, B> Convert<Vec<B>> for Vec<A> {
    fn convert(self) -> Vec<B> {
        self.into_iter().map(Convert::convert).collect()
    }
}

impl<A: Convert<B>, B, E: Convert<F>, F> Convert<Result<B, F>> for Result<A, E> {
    fn convert(self) -> Result<B, F> {
        self.map(Convert::convert).map_err(Convert::convert)
    }
}

/// Both directions of a record whose fields have the same names.
#[doc(hidden)]
#[macro_export]
macro_rules! __record {
    ($a:ident :: $t:ident, $b:ident :: $u:ident, { $($f:ident),+ $(,)? }) => {
        impl $crate::Convert<$b::$u> for $a::$t {
            fn convert(self) -> $b::$u {
                $b::$u { $($f: $crate::Convert::convert(self.$f)),+ }
            }
        }
        impl $crate::Convert<$a::$t> for $b::$u {
            fn convert(self) -> $a::$t {
                $a::$t { $($f: $crate::Convert::convert(self.$f)),+ }
            }
        }
    };
}

/// Both directions of an enum or variant whose cases have the same names
/// and at most one payload each.
#[doc(hidden)]
#[macro_export]
macro_rules! __cases {
    ($a:ident :: $t:ident, $b:ident :: $u:ident, [$($c:ident),* $(,)?] [$($p:ident),* $(,)?]) => {
        impl $crate::Convert<$b::$u> for $a::$t {
            fn convert(self) -> $b::$u {
                match self {
                    $($a::$t::$c => $b::$u::$c,)*
                    $($a::$t::$p(x) => $b::$u::$p($crate::Convert::convert(x)),)*
                }
            }
        }
        impl $crate::Convert<$a::$t> for $b::$u {
            fn convert(self) -> $a::$t {
                match self {
                    $($b::$u::$c => $a::$t::$c,)*
                    $($b::$u::$p(x) => $a::$t::$p($crate::Convert::convert(x)),)*
                }
            }
        }
    };
}

/// The conversions of the WIT types whose core counterpart is shaped
/// differently (an error's cases carry records in the WIT, fields in the
/// core), expanded by [`wit_conversions!`] beside the generated ones.
#[doc(hidden)]
#[macro_export]
macro_rules! __shaped_conversions {
    () => {
        impl $crate::Convert<wit::CtxpackError> for ctx::Error {
            fn convert(self) -> wit::CtxpackError {
                match self {
                    ctx::Error::InvalidField { field, message } => {
                        wit::CtxpackError::InvalidField(wit::FieldError { field, message })
                    }
                    ctx::Error::MandatoryOverBudget {
                        mandatory_tokens,
                        budget,
                    } => wit::CtxpackError::MandatoryOverBudget(wit::MandatoryShortfall {
                        mandatory_tokens,
                        budget,
                    }),
                    ctx::Error::TokenizerUnavailable(why) => {
                        wit::CtxpackError::TokenizerUnavailable(why)
                    }
                    ctx::Error::HostFailed {
                        capability,
                        message,
                    } => wit::CtxpackError::HostFailed(wit::HostError {
                        capability,
                        message,
                    }),
                    ctx::Error::StepMismatch(why) => wit::CtxpackError::StepMismatch(why),
                }
            }
        }

        impl $crate::Convert<wit::AssemblyFailure> for ctx::Failure {
            fn convert(self) -> wit::AssemblyFailure {
                let ctx::Failure { error, snapshot } = self;
                wit::AssemblyFailure {
                    error: $crate::Convert::convert(error),
                    snapshot: snapshot.map(|s| $crate::Convert::convert(*s)),
                }
            }
        }

        impl $crate::Convert<ctx::Failure> for wit::AssemblyFailure {
            fn convert(self) -> ctx::Failure {
                let wit::AssemblyFailure { error, snapshot } = self;
                ctx::Failure {
                    error: $crate::Convert::convert(error),
                    snapshot: snapshot.map(|s| Box::new($crate::Convert::convert(s))),
                }
            }
        }

        impl $crate::Convert<ctx::Error> for wit::CtxpackError {
            fn convert(self) -> ctx::Error {
                match self {
                    wit::CtxpackError::InvalidField(e) => ctx::Error::InvalidField {
                        field: e.field,
                        message: e.message,
                    },
                    wit::CtxpackError::MandatoryOverBudget(s) => ctx::Error::MandatoryOverBudget {
                        mandatory_tokens: s.mandatory_tokens,
                        budget: s.budget,
                    },
                    wit::CtxpackError::TokenizerUnavailable(why) => {
                        ctx::Error::TokenizerUnavailable(why)
                    }
                    wit::CtxpackError::HostFailed(e) => ctx::Error::HostFailed {
                        capability: e.capability,
                        message: e.message,
                    },
                    wit::CtxpackError::StepMismatch(why) => ctx::Error::StepMismatch(why),
                }
            }
        }
    };
}
