//! Property-test strategies and checks shared by the decoders' fast-path tests.
//!
//! Each wire's `fast/tests.rs` builds its events or chunks from these JSON pieces (tokens,
//! values, members, objects), damages some of them with [`damaged`], and checks the fast path
//! against serde with [`agrees_with_serde`] and a whole decoder with [`decoders_agree`]. What is
//! particular to a wire (its chunk shapes, event types, which fields are rare) stays in its file.
//!
//! The generators take `noisy` (in [`Json`]): without it, they make only valid JSON of the
//! right types, the rare fields absent or `null`, in any order and spacing, so that most of it is
//! read fast and its reading compared; with it, also the near misses (wrong types, invalid
//! tokens, repeated keys, the rare fields set), which the fast path must decline.

use std::fmt::Debug;
use std::path::PathBuf;

use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde::Deserialize;
use toolsmith_core::{ModelError, ModelPart};

use crate::decode::StreamDecoder;

/// Fails when the fast path (`read`, which declines with `None`) reads `data` and serde rejects
/// it or reads something else. Returns whether the fast path read it.
pub(crate) fn agrees_with_serde<'a, T>(
    data: &'a str,
    read: impl FnOnce(&'a str) -> Option<T>,
) -> Result<bool, String>
where
    T: Deserialize<'a> + PartialEq + Debug,
{
    let data = data.trim();
    let Some(fast) = read(data) else {
        return Ok(false);
    };
    let serde: T = serde_json::from_str(data)
        .map_err(|e| format!("the fast path read what serde rejects ({e}): {data}"))?;
    if fast != serde {
        return Err(format!("fast {fast:?}\n!= serde {serde:?}\nfor {data}"));
    }
    Ok(true)
}

/// The recorded streams (`*.chunks.txt`, a payload a line) in these folders of the shared
/// fixtures, as `(file name, payloads)`, blank lines left out.
pub(crate) fn chunks_fixtures(dirs: &[&str]) -> Vec<(String, Vec<String>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut streams = Vec::new();
    for dir in dirs {
        for entry in std::fs::read_dir(root.join(dir)).expect("the fixtures") {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".chunks.txt") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let payloads = text.lines().filter(|l| !l.trim().is_empty());
            streams.push((name, payloads.map(str::to_owned).collect()));
        }
    }
    streams
}

/// Runs `payloads` through `fast`, reading with the fast path, and `slow`, reading with serde
/// only (`push_with`'s last argument), comparing every push's parts and result, then `finish`.
pub(crate) fn decoders_agree<D: StreamDecoder>(
    mut fast: D,
    mut slow: D,
    push_with: fn(&mut D, &str, &mut Vec<ModelPart>, bool) -> Result<(), ModelError>,
    payloads: &[String],
) -> Result<(), TestCaseError> {
    let (mut fast_out, mut slow_out) = (Vec::new(), Vec::new());
    for payload in payloads {
        let fast_result = push_with(&mut fast, payload, &mut fast_out, true);
        let slow_result = push_with(&mut slow, payload, &mut slow_out, false);
        prop_assert_eq!(&fast_result, &slow_result, "result of {}", payload);
        prop_assert_eq!(&fast_out, &slow_out, "parts after {}", payload);
    }
    prop_assert_eq!(fast.finish(&mut fast_out), slow.finish(&mut slow_out));
    prop_assert_eq!(fast_out, slow_out);
    Ok(())
}

/// `text` cut short at the character boundary `at` picks.
pub(crate) fn cut_short(text: &mut String, at: Index) {
    let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    text.truncate(boundaries[at.index(boundaries.len())]);
}

/// `payloads`, each damaged with probability `rate`: cut short, a character dropped, or one
/// inserted (a structural one, a digit or a dot), at a character boundary.
pub(crate) fn damaged(
    payloads: impl Strategy<Value = String>,
    rate: f64,
) -> impl Strategy<Value = String> {
    let inserted = select(vec![
        '{', '}', '[', ']', ',', ':', '"', '\\', ' ', '0', '1', '.',
    ]);
    let damage = prop::option::weighted(rate, (0..3u8, any::<Index>(), inserted));
    (payloads, damage).prop_map(|(mut text, damage)| {
        if let Some((how, at, ch)) = damage {
            let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
            let at = boundaries[at.index(boundaries.len())];
            match how {
                0 => text.truncate(at),
                1 => {
                    text.remove(at);
                }
                _ => text.insert(at, ch),
            }
        }
        text
    })
}

/// Numbers in and out of JSON's grammar and a `u64`'s range.
pub(crate) fn number_token() -> BoxedStrategy<String> {
    select(vec![
        "0",
        "1",
        "2",
        "99",
        "100",
        "185",
        "-0",
        "-1",
        "00",
        "01",
        "1.0",
        "1.5",
        "1e2",
        "1E+2",
        "-2.5e-3",
        "1e999",
        "1.",
        "-",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999",
    ])
    .prop_map(str::to_owned)
    .boxed()
}

/// An object of `members`, with one of JSON's whitespaces around its tokens.
pub(crate) fn object(
    members: impl Strategy<Value = Vec<(String, String)>> + 'static,
) -> BoxedStrategy<String> {
    (members, select(vec!["", "", " ", "\n ", "\t", "\r\n"]))
        .prop_map(|(members, ws)| {
            let members: Vec<String> = members
                .into_iter()
                .map(|(k, v)| format!("{ws}\"{k}\"{ws}:{ws}{v}{ws}"))
                .collect();
            format!("{{{}}}", members.join(","))
        })
        .boxed()
}

/// A known member for [`Json::members`]: its key, how often it is there, and its values.
pub(crate) type Known = (&'static str, f64, BoxedStrategy<String>);

/// `known`, each there with probability `present`.
pub(crate) fn each_present(
    present: f64,
    known: Vec<(&'static str, BoxedStrategy<String>)>,
) -> Vec<Known> {
    known.into_iter().map(|(k, v)| (k, present, v)).collect()
}

/// JSON values for one wire: `keys` are its known keys (an escaped one among them), which the
/// unknown members and nested objects use now and then; `noisy` adds the near misses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Json {
    pub noisy: bool,
    pub keys: &'static [&'static str],
}

impl Json {
    /// A JSON string token: plain text, unicode, escapes, and when `noisy` sometimes what is not
    /// allowed in one.
    pub fn string_token(self) -> BoxedStrategy<String> {
        let valid = prop_oneof![
            16 => "[a-zA-Z0-9 ,.!?{}:$\\[\\]]{0,6}",
            2 => select(vec!["é", "日本", "😀", "\u{7f}", "\u{a0}"]).prop_map(str::to_owned),
            3 => select(vec![
                "\\n", "\\\"", "\\\\", "\\/", "\\t", "\\b", "\\f", "\\r", "\\u00e9", "\\u0000",
                "\\ud83d\\ude00", "\\uD83D\\uDE00",
            ])
            .prop_map(str::to_owned),
        ];
        let piece = if self.noisy {
            let invalid = select(vec![
                "\\ud83d", "\\ude00", "\\x", "\\u12", "\u{1}", "\n", "\"", "\\",
            ]);
            prop_oneof![20 => valid, 1 => invalid.prop_map(str::to_owned)].boxed()
        } else {
            valid.boxed()
        };
        prop::collection::vec(piece, 0..4)
            .prop_map(|pieces| format!("\"{}\"", pieces.concat()))
            .boxed()
    }

    /// A scalar for an unknown member: valid JSON (which the fast path skips), and when `noisy`
    /// sometimes not.
    pub fn scalar(self) -> BoxedStrategy<String> {
        let valid = prop_oneof![
            6 => self.string_token(),
            3 => select(vec!["0", "-1", "2.5", "1e999", "18446744073709551616"])
                .prop_map(str::to_owned),
            2 => select(vec!["null", "true", "false"]).prop_map(str::to_owned),
        ];
        if self.noisy {
            let invalid = prop_oneof![
                number_token(),
                select(vec!["nul", "True"]).prop_map(str::to_owned)
            ];
            prop_oneof![11 => valid, 1 => invalid].boxed()
        } else {
            valid.boxed()
        }
    }

    /// A key: mostly any, sometimes a known one.
    pub fn key(self) -> BoxedStrategy<String> {
        prop_oneof![
            3 => "[a-zA-Z_]{1,8}",
            1 => select(self.keys).prop_map(str::to_owned),
        ]
        .boxed()
    }

    /// Any value, nested a few levels, with keys that are sometimes the known ones.
    pub fn any_value(self) -> BoxedStrategy<String> {
        self.scalar()
            .prop_recursive(3, 12, 3, move |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..3)
                        .prop_map(|v| format!("[{}]", v.join(","))),
                    prop::collection::vec((self.key(), inner), 0..3).prop_map(|members| {
                        let members: Vec<String> = members
                            .into_iter()
                            .map(|(k, v)| format!("\"{k}\":{v}"))
                            .collect();
                        format!("{{{}}}", members.join(","))
                    }),
                ]
            })
            .boxed()
    }

    /// `valid` values and, when `noisy`, sometimes any value instead (often of the wrong type).
    pub fn or_any(self, valid: impl Strategy<Value = String> + 'static) -> BoxedStrategy<String> {
        if self.noisy {
            prop_oneof![10 => valid, 1 => self.any_value()].boxed()
        } else {
            valid.boxed()
        }
    }

    /// A value for an `Option<Str>` field: a string or null (or, when `noisy`, sometimes any).
    pub fn optional_string(self) -> BoxedStrategy<String> {
        self.or_any(prop_oneof![4 => self.string_token(), 1 => Just("null".to_owned())])
    }

    /// A value for a rare, JSON-valued field, which the fast path reads only as `null`: `null`
    /// or, when `noisy`, sometimes a value of the kind the API sends (`real`) or anything.
    pub fn rare(self, real: &'static str) -> BoxedStrategy<String> {
        if self.noisy {
            prop_oneof![
                4 => Just("null".to_owned()),
                1 => Just(real.to_owned()),
                1 => self.any_value(),
            ]
            .boxed()
        } else {
            Just("null".to_owned()).boxed()
        }
    }

    /// Members `(key, value)` from the optional `known` ones (each there with its probability)
    /// and up to `unknown` unknown ones, shuffled; when `noisy`, sometimes with one repeated.
    pub fn members(
        self,
        known: Vec<Known>,
        unknown: usize,
    ) -> impl Strategy<Value = Vec<(String, String)>> {
        let known: Vec<_> = known
            .into_iter()
            .map(|(k, p, v)| prop::option::weighted(p, v.prop_map(move |v| (k.to_owned(), v))))
            .collect();
        let repeat = if self.noisy {
            prop::option::weighted(0.1, any::<Index>()).boxed()
        } else {
            Just(None).boxed()
        };
        (
            known,
            prop::collection::vec((self.key(), self.any_value()), 0..=unknown),
            repeat,
        )
            .prop_flat_map(|(known, unknown, repeat)| {
                let mut all: Vec<_> = known.into_iter().flatten().chain(unknown).collect();
                if let Some(at) = repeat
                    && !all.is_empty()
                {
                    all.push(all[at.index(all.len())].clone());
                }
                Just(all).prop_shuffle()
            })
    }
}
