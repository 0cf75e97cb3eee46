//! The tag-first decoding against serde's derived form.

use serde::Deserialize;

use super::*;

#[derive(Debug, PartialEq)]
enum Shape {
    Circle { r: u32 },
    Square { side: u32, label: String },
    Dot,
    Pen(Pen),
    Other,
}

/// Strings as an option, an enum and a newtype.
#[derive(Debug, PartialEq, Deserialize)]
struct Pen {
    note: Option<String>,
    color: Color,
    name: Name,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Color {
    Red,
    Blue,
}

#[derive(Debug, PartialEq, Deserialize)]
struct Name(String);

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize(d)
    }
}

impl<'de> Tagged<'de> for Shape {
    const EXPECTING: &'static str = "a shape";

    fn variant<F: Fields<'de>>(tag: &str, fields: F) -> Result<Self, F::Error> {
        #[derive(Deserialize)]
        struct Circle {
            r: u32,
        }
        #[derive(Deserialize)]
        struct Square {
            side: u32,
            #[serde(default)]
            label: String,
        }
        Ok(match tag {
            "circle" => Shape::Circle {
                r: fields.read::<Circle>()?.r,
            },
            "square" => {
                let s: Square = fields.read()?;
                Shape::Square {
                    side: s.side,
                    label: s.label,
                }
            }
            "dot" => {
                fields.skip()?;
                Shape::Dot
            }
            "pen" => Shape::Pen(fields.read()?),
            _ => {
                fields.skip()?;
                Shape::Other
            }
        })
    }
}

/// The same enum, derived: the reference behaviour.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Derived {
    Circle {
        r: u32,
    },
    Square {
        side: u32,
        #[serde(default)]
        label: String,
    },
    Dot,
    Pen {
        note: Option<String>,
        color: Color,
        name: Name,
    },
    #[serde(other)]
    Other,
}

fn same(d: Derived) -> Shape {
    match d {
        Derived::Circle { r } => Shape::Circle { r },
        Derived::Square { side, label } => Shape::Square { side, label },
        Derived::Dot => Shape::Dot,
        Derived::Pen { note, color, name } => Shape::Pen(Pen { note, color, name }),
        Derived::Other => Shape::Other,
    }
}

#[test]
fn agrees_with_the_derived_form() {
    let cases = [
        r#"{"type":"circle","r":3}"#,
        r#"{"r":3,"type":"circle"}"#,
        r#"{"r":3,"extra":{"deep":[1,2,{"x":null}]},"type":"circle","more":true}"#,
        r#"{"type":"square","side":2}"#,
        r#"{"side":2,"label":"a\"b","type":"square"}"#,
        r#"{"label":"plain","side":2,"type":"square"}"#,
        r#"{"note":"n","color":"red","name":"x","type":"pen"}"#,
        r#"{"note":"a\nb","color":"blu\u0065","name":"\"q\"","type":"pen"}"#,
        r#"{"note":null,"color":"blue","type":"pen","name":"x"}"#,
        r#"{"color":"green","name":"x","type":"pen"}"#,
        r#"{"note":1,"color":"red","name":"x","type":"pen"}"#,
        r#"{"type":"pen","note":"n","color":"red","name":"x"}"#,
        r#"{"label":"x","n":null,"f":1.5,"u":18446744073709551615,"i":-7,"b":false,"a":[{"k":"v"}],"side":2,"type":"square"}"#,
        r#"{"r":"3","type":"circle"}"#,
        r#"{"label":7,"side":2,"type":"square"}"#,
        r#"{"side":2,"side":3,"type":"square"}"#,
        r#"{"type":"sq\u0075are","side":2}"#,
        r#"{"type":"dot"}"#,
        r#"{"type":"dot","r":"anything"}"#,
        r#"{"type":"hexagon","sides":6}"#,
        r#"{"type":""}"#,
        r#"{"type":"circle"}"#,
        r#"{"type":"circle","r":"three"}"#,
        r#"{"type":"circle","r":-1}"#,
        r#"{"r":3}"#,
        r#"{}"#,
        r#"{"type":null}"#,
        r#"{"type":"circle","r":3"#,
        r#"{"type":"hexagon","sides":[1,2}"#,
        r#"{"type":"circle","r":3} trailing"#,
        r#"[]"#,
        r#""circle""#,
        r#"null"#,
        r#"42"#,
        "",
    ];
    assert_agree(
        &cases,
        |c| serde_json::from_str::<Shape>(c),
        |c| serde_json::from_str::<Derived>(c).map(same),
    );
}

#[test]
fn reads_from_values_too() {
    let v = serde_json::json!({"label": "x", "side": 4, "type": "square"});
    assert_eq!(
        serde_json::from_value::<Shape>(v).unwrap(),
        Shape::Square {
            side: 4,
            label: "x".into()
        }
    );
}

#[test]
fn the_tag_must_be_a_string_in_an_object() {
    for case in [r#"{"type":1,"side":2}"#, r#"["square",2]"#, r#"[1,2]"#] {
        assert!(serde_json::from_str::<Shape>(case).is_err(), "{case}");
    }
}

#[test]
fn a_missing_tag_is_named() {
    let e = serde_json::from_str::<Shape>(r#"{"r":1}"#).unwrap_err();
    assert!(e.to_string().contains("missing field `type`"), "{e}");
}
