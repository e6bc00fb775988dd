//! The arms of the imports: each import the component calls forwarded to the
//! lent [`ctx::Host`], and the step protocol's calls and answers as the core
//! spells them.

use super::{Imports, ctx, exported, imports, wit};
use ctxpack_wit::Convert;

/// The host's side of every import, expanded from the WIT's list
/// ([`ctxpack_wit::wit_capabilities!`]): a call of the step protocol as the
/// core spells it, and each import forwarded to the lent [`ctx::Host`].
macro_rules! host_arms {
    ($( $interface:ident {
        $( $function:ident $Capability:ident [$($Request:ident)?] ($($context:ident)?)
            { $($param:ident : $kind:ident [$owned:ty] [$core:ty]),* } -> [$answer:ty] [$core_answer:ty]; )*
    } )*) => {
        /// A call as the core spells it.
        pub(super) fn call(call: exported::Call) -> ctx::Call<'static> {
            use exported::Call as W;
            match call {
                $($(
                    host_arms!(@case W $Capability [$($Request)?] r) => ctx::Call::$Capability {
                        $($param: host_arms!(@from $kind r.$param)),*
                    },
                )*)*
            }
        }

        $(
            impl imports::$interface::Host for Imports {
                $(
                    fn $function(
                        &mut self,
                        $($context: wit::AgentContext,)?
                        $($param: $owned),*
                    ) -> Result<$answer, wit::HostError> {
                        answer(ctx::Host::$function(
                            &mut *self.0,
                            $(&$context.convert(),)?
                            $(host_arms!(@arg $kind $param)),*
                        ))
                    }
                )*
            }
        )*
    };
    (@case $W:ident $Capability:ident [$Request:ident] $r:ident) => { $W::$Capability($r) };
    (@case $W:ident $Capability:ident [] $r:ident) => { $W::$Capability };
    // A field of the call's record, as the core's `Call` holds it.
    (@from str $e:expr) => { $e.into() };
    (@from strs $e:expr) => { $e.into() };
    (@from copy $e:expr) => { $e };
    (@from candidates $e:expr) => { $e.convert().into() };
    (@from records $e:expr) => { $e.convert().into() };
    (@from value $e:expr) => { $e.convert() };
    // An import's parameter, as the core's `Host` takes it.
    (@arg str $p:ident) => { &$p };
    (@arg strs $p:ident) => { &$p };
    (@arg copy $p:ident) => { $p };
    (@arg candidates $p:ident) => {
        &Convert::<Vec<ctx::Candidate>>::convert($p).iter().collect::<Vec<_>>()
    };
    (@arg records $p:ident) => { &$p.convert() };
    (@arg value $p:ident) => { $p.convert() };
}

ctxpack_wit::wit_capabilities!(host_arms);
ctxpack_wit::wit_answers!();

fn answer<A: Convert<B>, B>(r: Result<A, ctx::HostError>) -> Result<B, wit::HostError> {
    r.map(Convert::convert).map_err(Convert::convert)
}

impl wit::Host for Imports {}
