//! What every `[[geometry]]` shape's resolver shares (`geometry.rs` for the primitives,
//! `import.rs` for shapes drawn elsewhere): the scene's context and the lookup of a material
//! by name, with its error.

use super::{list, Checker};
use crate::model::MaterialTable;
use crate::scene::diagnostics::closest;
use crate::scene::schema::SceneFile;
use toml::Spanned;

/// The id of material `name` (the value of key `key`), or None with the problem
/// reported: an unknown name gets the defined ones and the closest; a material defined but not
/// readable was reported where it is defined.
pub(super) fn material_id(
    scene: &SceneFile,
    ck: &mut Checker,
    table: &MaterialTable,
    dropped: &[String],
    name: &Spanned<String>,
    key: &str,
) -> Option<u8> {
    if let Some(id) = table.id(name.get_ref()) {
        return Some(id);
    }
    if scene.unread_materials.contains(name.get_ref()) || dropped.contains(name.get_ref()) {
        return None;
    }
    let names: Vec<&str> = table.materials.iter().map(|m| m.name.as_str()).collect();
    let hint = closest(name.get_ref(), &names)
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_default();
    ck.error(
        name,
        key,
        format!(
            "unknown material `{}`: defined are {}{hint}",
            name.get_ref(),
            list(&names)
        ),
    );
    None
}

/// What every shape's resolver is given: the scene, the material table and the length unit.
pub(super) struct Ctx<'a> {
    pub scene: &'a SceneFile,
    pub table: &'a MaterialTable,
    pub dropped: &'a [String],
    pub unit_m: f64,
}
