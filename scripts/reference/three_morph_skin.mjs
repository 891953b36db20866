// three_morph_skin.mjs: three.js reference for morph-then-skin vertex positions of CesiumMan.
//
// Reads ../shared/data/gltf/CesiumMan.glb (relative to the repository root; found from this
// script's own location) and writes
// crates/skelett-io/tests/reference/morph_skin/CesiumMan.morph_skin.json.
// No skelett code is involved: every position is three.js's own
// (SkinnedMesh.getVertexPosition = Mesh.getVertexPosition's morph targets, then applyBoneTransform).
//
// How to run (made with Node v20.20.2, npm 11.19.1, three 0.187.0):
//   mkdir -p /tmp/three_oracle && cd /tmp/three_oracle
//   npm init -y && npm install three@0.187.0
//   node /path/to/repo/scripts/reference/three_morph_skin.mjs
// three is loaded from ./node_modules of the current directory (or of $THREE_ORACLE_DIR).
// Optional arguments: [input.glb [output.json]].
//
// What it does:
// - The GLB's JSON chunk is edited in memory before GLTFLoader.parse: `images`, `textures`
//   and `samplers` are deleted, and every `...Texture` reference is removed from the
//   materials (Node has no image decoder). Nodes, meshes, accessors, skins, animations and
//   the BIN chunk are untouched, so geometry, skin and animation are exactly the file's.
// - The first SkinnedMesh (CesiumMan has one, primitive 0 of mesh 0) gets one synthetic
//   relative morph target on `position`; for vertex i (glTF accessor order), in float64
//   then stored as float32:
//     dx = (((i * 7) % 11) / 11 - 0.5) * 0.1
//     dy = (((i * 13) % 17) / 17 - 0.5) * 0.1
//     dz = (((i * 5) % 7) / 7 - 0.5) * 0.1
// - Clip 0 is played by an AnimationMixer (LoopOnce, clampWhenFinished; action.reset(),
//   play(), mixer.setTime(t) for each time), then scene.updateMatrixWorld(true) and
//   skeleton.update(). applyBoneTransform reads bones[j].matrixWorld and boneInverses
//   directly (not skeleton.boneMatrices), so updateMatrixWorld is what makes it current.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const scriptDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(scriptDir, '..', '..');
const input = process.argv[2] ?? path.resolve(repoRoot, '..', 'shared', 'data', 'gltf', 'CesiumMan.glb');
const output = process.argv[3] ?? path.join(repoRoot, 'crates', 'skelett-io', 'tests', 'reference',
	'morph_skin', 'CesiumMan.morph_skin.json');

const oracleDir = process.env.THREE_ORACLE_DIR ?? process.cwd();
const threeRoot = path.join(oracleDir, 'node_modules', 'three');
const threeVersion = JSON.parse(fs.readFileSync(path.join(threeRoot, 'package.json'), 'utf8')).version;
const THREE = await import(pathToFileURL(path.join(threeRoot, 'build', 'three.module.js')).href);
const { GLTFLoader } = await import(pathToFileURL(path.join(threeRoot, 'examples', 'jsm', 'loaders', 'GLTFLoader.js')).href);

// ---- GLB without textures -------------------------------------------------------------
function stripTextures(glbBuf) {
	const magic = glbBuf.readUInt32LE(0);
	if (magic !== 0x46546c67) throw new Error('not a GLB');
	const jsonLen = glbBuf.readUInt32LE(12);
	if (glbBuf.readUInt32LE(16) !== 0x4e4f534a) throw new Error('first chunk is not JSON');
	const json = JSON.parse(glbBuf.subarray(20, 20 + jsonLen).toString('utf8'));
	const rest = glbBuf.subarray(20 + jsonLen); // BIN chunk header + data, unchanged

	delete json.images;
	delete json.textures;
	delete json.samplers;
	const dropTextures = (obj) => {
		if (obj === null || typeof obj !== 'object') return;
		for (const key of Object.keys(obj)) {
			if (/Texture$/.test(key)) delete obj[key];
			else dropTextures(obj[key]);
		}
	};
	for (const m of json.materials ?? []) dropTextures(m);

	let jsonBytes = Buffer.from(JSON.stringify(json), 'utf8');
	const pad = (4 - (jsonBytes.length % 4)) % 4;
	jsonBytes = Buffer.concat([jsonBytes, Buffer.alloc(pad, 0x20)]);
	const header = Buffer.alloc(20);
	header.writeUInt32LE(0x46546c67, 0);
	header.writeUInt32LE(2, 4);
	header.writeUInt32LE(20 + jsonBytes.length + rest.length, 8);
	header.writeUInt32LE(jsonBytes.length, 12);
	header.writeUInt32LE(0x4e4f534a, 16);
	const out = Buffer.concat([header, jsonBytes, rest]);
	return out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength);
}

const glb = stripTextures(fs.readFileSync(input));
const gltf = await new Promise((resolve, reject) => new GLTFLoader().parse(glb, '', resolve, reject));
const scene = gltf.scene;

let mesh = null;
scene.traverse((o) => { if (mesh === null && o.isSkinnedMesh) mesh = o; });
if (mesh === null) throw new Error('no SkinnedMesh');
const geometry = mesh.geometry;
const N = geometry.attributes.position.count;

// ---- synthetic morph target -----------------------------------------------------------
const offsets = new Float32Array(3 * N);
for (let i = 0; i < N; i++) {
	offsets[3 * i + 0] = (((i * 7) % 11) / 11 - 0.5) * 0.1;
	offsets[3 * i + 1] = (((i * 13) % 17) / 17 - 0.5) * 0.1;
	offsets[3 * i + 2] = (((i * 5) % 7) / 7 - 0.5) * 0.1;
}
let maxAbsOffset = 0;
for (const v of offsets) maxAbsOffset = Math.max(maxAbsOffset, Math.abs(v));

const morphAttr = new THREE.BufferAttribute(offsets, 3);
function attachMorph() {
	geometry.morphAttributes.position = [morphAttr];
	geometry.morphTargetsRelative = true;
	mesh.updateMorphTargets();
}
function detachMorph() {
	delete geometry.morphAttributes.position;
	geometry.morphTargetsRelative = false;
	mesh.updateMorphTargets();
}
attachMorph();

// ---- animation ------------------------------------------------------------------------
const clip = gltf.animations[0];
let start = Infinity, end = -Infinity;
for (const track of clip.tracks) {
	start = Math.min(start, track.times[0]);
	end = Math.max(end, track.times[track.times.length - 1]);
}
const duration = end - start;
const mixer = new THREE.AnimationMixer(scene);
const action = mixer.clipAction(clip);
action.setLoop(THREE.LoopOnce);
action.clampWhenFinished = true;

function pose(t) {
	action.reset();
	action.play();
	mixer.setTime(t);
	scene.updateMatrixWorld(true);
	mesh.skeleton.update();
}

const times = [start, start + 0.37 * duration, start + 0.5 * duration + 0.013, end];
const weights = [0.0, 0.75, 1.5, -0.5];

const vertices = [];
if (N <= 256) for (let i = 0; i < N; i++) vertices.push(i);
else for (let k = 0; k < 256; k++) vertices.push(Math.floor((k * N) / 256));

// ---- independent float64 check: linear blend skinning written out here -------------------
function ownSkin(i, p) {
	const si = new THREE.Vector4().fromBufferAttribute(geometry.attributes.skinIndex, i);
	const sw = new THREE.Vector4().fromBufferAttribute(geometry.attributes.skinWeight, i);
	const b = new THREE.Vector4(p.x, p.y, p.z, 1).applyMatrix4(mesh.bindMatrix);
	const acc = new THREE.Vector4(0, 0, 0, 0);
	const m = new THREE.Matrix4();
	for (let c = 0; c < 4; c++) {
		const w = sw.getComponent(c);
		if (w === 0) continue;
		const j = si.getComponent(c);
		m.multiplyMatrices(mesh.skeleton.bones[j].matrixWorld, mesh.skeleton.boneInverses[j]);
		acc.addScaledVector(b.clone().applyMatrix4(m), w);
	}
	return new THREE.Vector3(acc.x, acc.y, acc.z).applyMatrix4(mesh.bindMatrixInverse);
}

const r7 = (x) => { const y = Number(x.toPrecision(7)); return Object.is(y, -0) ? 0 : y; };
const v3 = (v) => [r7(v.x), r7(v.y), r7(v.z)];

const samples = [];
let sanityW0 = 0, ownSkinDiff = 0;
const tmp = new THREE.Vector3();
for (let s = 0; s < times.length; s++) {
	const t = times[s], w = weights[s];
	pose(t);
	mesh.morphTargetInfluences[0] = w;
	const local = [], world = [], morphed = [];
	for (const i of vertices) {
		const p = mesh.getVertexPosition(i, new THREE.Vector3());
		local.push(v3(p));
		world.push(v3(p.clone().applyMatrix4(mesh.matrixWorld)));
		const bind = new THREE.Vector3().fromBufferAttribute(geometry.attributes.position, i);
		const m = new THREE.Vector3(
			bind.x + w * offsets[3 * i], bind.y + w * offsets[3 * i + 1], bind.z + w * offsets[3 * i + 2]);
		morphed.push(v3(m));
		ownSkinDiff = Math.max(ownSkinDiff, ownSkin(i, m).distanceTo(p));
		if (w === 0) {
			detachMorph();
			mesh.getVertexPosition(i, tmp);
			sanityW0 = Math.max(sanityW0, Math.abs(tmp.x - p.x), Math.abs(tmp.y - p.y), Math.abs(tmp.z - p.z));
			attachMorph();
			mesh.morphTargetInfluences[0] = w;
		}
	}
	samples.push({ t, w, local, world, morphed });
}

const out = {
	file: path.basename(input),
	three: threeVersion,
	oracle: `three.js ${threeVersion} (r${threeVersion.split('.')[1]}) GLTFLoader + AnimationMixer, ` +
		'SkinnedMesh.getVertexPosition with one synthetic relative morph target on position (morph first, then skinning); no skelett code involved.',
	convention:
		'Mesh: the first SkinnedMesh three.js builds from the file (glTF node 2, mesh 0, primitive 0), vertices in glTF POSITION accessor order. ' +
		'Morph target: one relative position target; for vertex i (0-based) the offset is dx = (((i*7)%11)/11 - 0.5)*0.1, ' +
		'dy = (((i*13)%17)/17 - 0.5)*0.1, dz = (((i*5)%7)/7 - 0.5)*0.1, computed in float64 and stored as float32 (|offset| <= 0.05 per component). ' +
		'vertices: indices floor(k*N/256) for k = 0..255 (N = vertexCount). ' +
		'Clip 0: start = the earliest key time over all its channels, end = the latest, duration = end - start (glTF seconds, keys not shifted to 0); ' +
		'samples are at t = start, start + 0.37*duration, start + 0.5*duration + 0.013, end, with morph weight w = 0, 0.75, 1.5, -0.5 respectively ' +
		'(w outside 0..1 is deliberate); t is written unrounded (the exact float64 value that was evaluated); before the first key = first key, past the last key = last key; ' +
		'LINEAR rotations are slerped by three.js. ' +
		'morphed: POSITION (float32) + w * offset (float32), evaluated in float64, no skinning, in the mesh geometry space. ' +
		'local: three.js SkinnedMesh.getVertexPosition(i) = morphed, then linear blend skinning with the file\'s JOINTS_0/WEIGHTS_0 ' +
		'(sum_j weight_j * bindMatrixInverse * jointWorld_j * inverseBindMatrix_j * bindMatrix * morphed), i.e. in the mesh node space; ' +
		'world: local after the mesh node\'s world matrix (glTF scene space, every ancestor node included: what three renders). ' +
		'All positions are rounded to 7 significant digits.',
	clip: { index: 0, name: clip.name, start, duration, end },
	vertexCount: N,
	vertices,
	samples,
};
fs.mkdirSync(path.dirname(output), { recursive: true });
fs.writeFileSync(output, JSON.stringify(out) + '\n');

console.log(`three ${threeVersion}; mesh "${mesh.name}" N=${N}; clip "${clip.name}" start=${start} end=${end} duration=${duration}`);
console.log(`times ${times.join(', ')}; weights ${weights.join(', ')}`);
console.log(`max |offset| component ${maxAbsOffset}`);
console.log(`sanity: w=0 vs no morph attribute, max |diff| = ${sanityW0}`);
console.log(`check: own float64 LBS of morphed vs getVertexPosition, max distance = ${ownSkinDiff}`);
console.log(`wrote ${output}`);
