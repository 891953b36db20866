//! What the renderer is given: the [`Character`] to draw, as borrowed core types (so this
//! crate needs no importer), and the [`RenderOptions`] (size, layers, colours).

use std::sync::Arc;

use skelett::{EncodedImage, Skeleton, Skin, SkinnedMesh};

/// What the renderer draws, as core types: any importer's output (`skelett_io::Asset` has
/// these four fields), or meshes made in code.
#[derive(Clone, Copy, Debug)]
pub struct Character<'a> {
    /// The skeleton the skins' joints index into.
    pub skeleton: &'a Arc<Skeleton>,
    /// The skins the meshes name by index.
    pub skins: &'a [Skin],
    /// The skinned meshes.
    pub meshes: &'a [SkinnedMesh],
    /// Encoded base colour images, by [`skelett::MeshPrimitive::base_color_texture`] (an
    /// entry may be `None`, and the slice may be empty).
    pub images: &'a [Option<EncodedImage>],
}

impl<'a> Character<'a> {
    /// The four parts, in the order an importer's asset has them.
    pub fn new(
        skeleton: &'a Arc<Skeleton>,
        skins: &'a [Skin],
        meshes: &'a [SkinnedMesh],
        images: &'a [Option<EncodedImage>],
    ) -> Self {
        Self {
            skeleton,
            skins,
            meshes,
            images,
        }
    }
}

/// What to draw, and how large.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RenderOptions {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Draw the skinned, shaded meshes.
    pub skin: bool,
    /// Draw the meshes' triangle edges.
    pub wireframe: bool,
    /// Draw bones as lines between joints and joints as small axes, on top of everything.
    pub skeleton: bool,
    /// Draw a ground grid under the character.
    pub grid: bool,
    /// Background colour (linear RGB).
    pub background: [f32; 3],
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            width: 640,
            height: 480,
            skin: true,
            wireframe: false,
            skeleton: false,
            grid: true,
            background: [0.045, 0.05, 0.06],
        }
    }
}
