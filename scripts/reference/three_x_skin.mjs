// three_x_skin.mjs: three.js reference for skinned vertex positions of DirectX .x files,
// read through assimp's glTF 2 exporter.
//
// Usually run by scripts/reference/x_skin.sh, which converts every .x file with assimp first.
// By hand (made with Node v20.20.2, npm 11.19.1, three 0.187.0, assimp 5.2.5 from Debian assimp-utils):
//   assimp export ../shared/data/x/BCN_Epileptic.X /tmp/x/BCN_Epileptic.X.glb -fglb2
//   mkdir -p /tmp/three_oracle && cd /tmp/three_oracle
//   npm init -y && npm install three@0.187.0
//   node /path/to/repo/scripts/reference/three_x_skin.mjs /tmp/x/BCN_Epileptic.X.glb OUT.json [SOURCE_NAME]
// three is loaded from ./node_modules of the current directory (or of $THREE_ORACLE_DIR).
// SOURCE_NAME (default: the GLB's file name without ".glb") is written as "source";
// $ASSIMP_VERSION, if set, is written into "oracle".
// No skelett code is involved: every skinned position is three.js's own
// (SkinnedMesh.getVertexPosition = applyBoneTransform, then the mesh's matrixWorld).
//
// What it does:
// - The GLB's JSON chunk is edited in memory before GLTFLoader.parse: `images`, `textures`
//   and `samplers` are deleted, and every `...Texture` reference is removed from the
//   materials (Node has no image decoder). Nodes, meshes, accessors, skins, animations and
//   the BIN chunk are untouched, so geometry, skin and animation are exactly the GLB's.
// - Every SkinnedMesh three.js builds (scene traversal order) is sampled: vertices
//   i = 0, k, 2k, ... with k = ceil(N / 200) (N = its vertex count, glTF POSITION order).
//   For each: `rest` = POSITION (float32, the mesh geometry space), `joints` = the glTF node
//   names of its non-zero influences, `weights` = those weights as three.js uses them
//   (GLTFLoader calls normalizeSkinWeights: divided by their sum), and `skinned`, one [x,y,z]
//   per entry of `poses`.
// - Pose "rest": the node transforms as stored in the GLB, no AnimationMixer created yet
//   (scene.updateMatrixWorld(true); skeleton.update()).
// - Poses "clip0": clip 0 (the first AnimationSet) played by an AnimationMixer (LoopOnce,
//   clampWhenFinished; action.reset(), play(), mixer.setTime(t)), then
//   scene.updateMatrixWorld(true) and skeleton.update(). With start/end the earliest/latest key
//   over all channels and d4 = (end - start) rounded to 4 decimals, the times are
//   start, start + 0.37*d4, start + 0.5*d4 + 0.0133, start + 0.8*d4 + 0.0071, start + d4
//   (each rounded to 6 decimals; the first, second, third and fifth are the times of the
//   shared joint references ../shared/data/reference/<FILE>.json; start + d4 may lie past
//   the last key by < 5e-5 s, where the last key holds).
// - skinned = mesh.getVertexPosition(i) (mesh node space: bindMatrixInverse *
//   sum_j w_j * jointWorld_j * inverseBind_j * bindMatrix * rest, with GLTFLoader's
//   bindMatrix = identity and bindMatrixInverse = inverse(mesh.matrixWorld)), then
//   .applyMatrix4(mesh.matrixWorld): the glTF scene (world) space,
//   = sum_j w_j * jointWorld_j * inverseBind_j * rest, the space of the joint world matrices
//   of the shared joint references. Rounded to 7 significant digits.
// - Check written to stdout: the same sum written out in float64 here (jointWorld from
//   bones[j].matrixWorld, inverseBind from skeleton.boneInverses), max distance to three.js.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const input = process.argv[2];
const output = process.argv[3];
if (!input || !output) throw new Error('usage: node three_x_skin.mjs IN.glb OUT.json [SOURCE_NAME]');
const source = process.argv[4] ?? path.basename(input).replace(/\.glb$/i, '');
const assimpVersion = process.env.ASSIMP_VERSION ?? '5.2.5';

const oracleDir = process.env.THREE_ORACLE_DIR ?? process.cwd();
const threeRoot = path.join(oracleDir, 'node_modules', 'three');
const threeVersion = JSON.parse(fs.readFileSync(path.join(threeRoot, 'package.json'), 'utf8')).version;
const THREE = await import(pathToFileURL(path.join(threeRoot, 'build', 'three.module.js')).href);
const { GLTFLoader } = await import(pathToFileURL(path.join(threeRoot, 'examples', 'jsm', 'loaders', 'GLTFLoader.js')).href);

// ---- GLB without textures -------------------------------------------------------------
let gltfJson = null;
function stripTextures(glbBuf) {
	const magic = glbBuf.readUInt32LE(0);
	if (magic !== 0x46546c67) throw new Error('not a GLB');
	const jsonLen = glbBuf.readUInt32LE(12);
	if (glbBuf.readUInt32LE(16) !== 0x4e4f534a) throw new Error('first chunk is not JSON');
	const json = JSON.parse(glbBuf.subarray(20, 20 + jsonLen).toString('utf8'));
	gltfJson = JSON.parse(JSON.stringify(json));
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

const meshes = [];
scene.traverse((o) => { if (o.isSkinnedMesh) meshes.push(o); });
if (meshes.length === 0) throw new Error('no SkinnedMesh');

// glTF names of the joints (three.js sanitises object names; use the file's own).
const assoc = gltf.parser.associations;
function gltfNodeIndex(obj) {
	const a = assoc.get(obj);
	return a && a.nodes !== undefined ? a.nodes : null;
}
function jointNames(mesh) {
	return mesh.skeleton.bones.map((b) => {
		const n = gltfNodeIndex(b);
		return n !== null ? gltfJson.nodes[n].name : b.name;
	});
}

// ---- vertex selection -------------------------------------------------------------------
const r7 = (x) => { const y = Number(x.toPrecision(7)); return Object.is(y, -0) ? 0 : y; };
const v3 = (v) => [r7(v.x), r7(v.y), r7(v.z)];

const meshInfo = meshes.map((mesh) => {
	const g = mesh.geometry;
	const N = g.attributes.position.count;
	const k = Math.ceil(N / 200);
	const names = jointNames(mesh);
	let node = gltfNodeIndex(mesh);
	let prim = null;
	const a = assoc.get(mesh);
	if (a && a.meshes !== undefined) prim = a.primitives ?? null;
	// a single-primitive glTF mesh is the node's object itself; a multi-primitive one is a child
	if (node === null && mesh.parent) node = gltfNodeIndex(mesh.parent);
	const vertices = [];
	for (let i = 0; i < N; i += k) {
		const rest = new THREE.Vector3().fromBufferAttribute(g.attributes.position, i);
		const si = new THREE.Vector4().fromBufferAttribute(g.attributes.skinIndex, i);
		const sw = new THREE.Vector4().fromBufferAttribute(g.attributes.skinWeight, i);
		const joints = [], weights = [];
		for (let c = 0; c < 4; c++) {
			const w = sw.getComponent(c);
			if (w === 0) continue;
			joints.push(names[si.getComponent(c)]);
			weights.push(r7(w));
		}
		vertices.push({ i, rest: v3(rest), joints, weights, skinned: [] });
	}
	return {
		mesh,
		out: {
			name: node !== null ? gltfJson.nodes[node].name : mesh.name,
			gltfNode: node,
			gltfMesh: node !== null ? gltfJson.nodes[node].mesh : null,
			gltfMeshName: node !== null ? gltfJson.meshes[gltfJson.nodes[node].mesh].name : null,
			primitive: prim,
			vertexCount: N,
			step: k,
			meshWorld: mesh.matrixWorld.elements.map(r7), // filled in below after updateMatrixWorld
			vertices,
		},
	};
});

// ---- evaluation -------------------------------------------------------------------------
let ownDiff = 0, nonFinite = 0;
const tmpM = new THREE.Matrix4();
function ownSkinWorld(mesh, i) {
	const g = mesh.geometry;
	const si = new THREE.Vector4().fromBufferAttribute(g.attributes.skinIndex, i);
	const sw = new THREE.Vector4().fromBufferAttribute(g.attributes.skinWeight, i);
	const p = new THREE.Vector4().fromBufferAttribute(g.attributes.position, i);
	p.w = 1;
	const acc = new THREE.Vector4(0, 0, 0, 0);
	for (let c = 0; c < 4; c++) {
		const w = sw.getComponent(c);
		if (w === 0) continue;
		const j = si.getComponent(c);
		tmpM.multiplyMatrices(mesh.skeleton.bones[j].matrixWorld, mesh.skeleton.boneInverses[j]);
		acc.addScaledVector(p.clone().applyMatrix4(tmpM), w);
	}
	return new THREE.Vector3(acc.x, acc.y, acc.z);
}

function sampleAll() {
	for (const { mesh, out } of meshInfo) {
		for (const v of out.vertices) {
			const p = mesh.getVertexPosition(v.i, new THREE.Vector3()).applyMatrix4(mesh.matrixWorld);
			if (!Number.isFinite(p.x) || !Number.isFinite(p.y) || !Number.isFinite(p.z)) nonFinite++;
			ownDiff = Math.max(ownDiff, ownSkinWorld(mesh, v.i).distanceTo(p));
			v.skinned.push(v3(p));
		}
	}
}

const poses = [];

// rest pose: node transforms as stored, no mixer
scene.updateMatrixWorld(true);
for (const { mesh, out } of meshInfo) {
	mesh.skeleton.update();
	out.meshWorld = mesh.matrixWorld.elements.map(r7);
}
poses.push({ pose: 'rest', t: null });
sampleAll();

// clip 0
const clip = gltf.animations[0];
let start = Infinity, end = -Infinity;
const keyTimes = new Set();
for (const track of clip.tracks) {
	start = Math.min(start, track.times[0]);
	end = Math.max(end, track.times[track.times.length - 1]);
	for (const t of track.times) keyTimes.add(t);
}
const duration = end - start;
const d4 = Number(duration.toFixed(4));
const r6 = (x) => Number(x.toFixed(6));
const times = [start, r6(start + 0.37 * d4), r6(start + 0.5 * d4 + 0.0133), r6(start + 0.8 * d4 + 0.0071), r6(start + d4)];

const mixer = new THREE.AnimationMixer(scene);
const action = mixer.clipAction(clip);
action.setLoop(THREE.LoopOnce);
action.clampWhenFinished = true;
for (const t of times) {
	action.reset();
	action.play();
	mixer.setTime(t);
	scene.updateMatrixWorld(true);
	for (const { mesh } of meshInfo) mesh.skeleton.update();
	let nearest = Infinity;
	for (const k of keyTimes) nearest = Math.min(nearest, Math.abs(k - t));
	poses.push({ pose: 'clip0', t, nearestKey: r7(nearest) });
	sampleAll();
}

// checks (max distances over the sampled vertices): rest pose vs stored positions, rest pose vs
// stored positions after the mesh node's rest world matrix, t=start vs rest pose
const checks = {};
{
	let restVsStored = 0, restVsMeshWorldStored = 0, t0VsRest = 0;
	for (const { out } of meshInfo) {
		const restWorld = new THREE.Matrix4().fromArray(out.meshWorld);
		for (const v of out.vertices) {
			const r = new THREE.Vector3(...v.rest);
			const s0 = new THREE.Vector3(...v.skinned[0]);
			const s1 = new THREE.Vector3(...v.skinned[1]);
			restVsStored = Math.max(restVsStored, s0.distanceTo(r));
			restVsMeshWorldStored = Math.max(restVsMeshWorldStored, s0.distanceTo(r.clone().applyMatrix4(restWorld)));
			t0VsRest = Math.max(t0VsRest, s1.distanceTo(s0));
		}
	}
	// restVsMeshWorldStored uses the rest-pose mesh matrixWorld. meshNodeMovedByClip: whether the
	// clip moves the skinned mesh nodes themselves (harmless: their transform cancels in skinned).
	let meshNodeMovedByClip = false;
	for (const { mesh, out } of meshInfo) {
		mesh.matrixWorld.elements.forEach((e, q) => { if (Math.abs(r7(e) - out.meshWorld[q]) > 1e-6) meshNodeMovedByClip = true; });
	}
	Object.assign(checks, { restVsStored: r7(restVsStored), restVsMeshWorldStored: r7(restVsMeshWorldStored), t0VsRest: r7(t0VsRest), meshNodeMovedByClip });
}

const out = {
	source,
	oracle: `assimp ${assimpVersion} (Debian assimp-utils: assimp export FILE.x out.glb -fglb2) then three.js ${threeVersion} ` +
		`(r${threeVersion.split('.')[1]}) GLTFLoader + AnimationMixer + SkinnedMesh.getVertexPosition; no skelett code involved.`,
	convention:
		'Coordinates: right-handed as assimp imports .x (its importer mirrors Z: the file\'s left-handed data conjugated by a Z mirror), ' +
		'the same space as the shared joint reference ../shared/data/reference/' + source + '.json; t in seconds = ticks / AnimTicksPerSecond (glTF clip time, keys not shifted). ' +
		'meshes: every SkinnedMesh three.js builds, scene traversal order; vertexCount = glTF POSITION count after assimp (assimp splits meshes by material). ' +
		'vertices: indices i = 0, step, 2*step, ... (step = ceil(vertexCount/200)), glTF accessor order. ' +
		'rest: POSITION as stored (float32), mesh geometry space, no skinning, no mesh-node transform. ' +
		'joints: glTF node names of the non-zero influences (JOINTS_0 through skin.joints); weights: the matching weights as three.js uses them ' +
		'(the file\'s, divided by their sum by GLTFLoader; the sums differ from 1 by < 1.1e-6). ' +
		'skinned: one [x,y,z] per entry of poses, in the glTF scene (world) space: sum_j weight_j * jointWorld_j * inverseBindMatrix_j * rest ' +
		'(three.js getVertexPosition, which gives mesh-node space, times the mesh node\'s matrixWorld; the skinned mesh node\'s own transform cancels). ' +
		'jointWorld is the column-major world matrix of the joint node (every ancestor included), as in the joint reference. ' +
		'poses[0] "rest": node transforms as stored, no animation. poses[1..]: clip 0 (first AnimationSet) at t; ' +
		'before the first key = first key, past the last key = last key; LINEAR, rotations slerped by three.js. ' +
		'meshWorld: column-major world matrix of the mesh node (rest pose). All floats rounded to 7 significant digits.',
	clip: { index: 0, name: clip.name, start, end, duration },
	poses,
	checks,
	meshes: meshInfo.map((m) => m.out),
};
fs.mkdirSync(path.dirname(output), { recursive: true });
fs.writeFileSync(output, JSON.stringify(out) + '\n');

console.log(`three ${threeVersion}; ${source}: ${meshes.length} skinned meshes: ` +
	meshInfo.map((m) => `${m.out.name} N=${m.out.vertexCount} step=${m.out.step} sampled=${m.out.vertices.length}`).join('; '));
console.log(`clip 0 "${clip.name}" start=${start} end=${end}; times ${times.join(', ')}`);
console.log(`nearest key per time: ${poses.slice(1).map((p) => p.nearestKey).join(', ')}`);
console.log(`checks: ${JSON.stringify(checks)}`);
console.log(`check: own float64 LBS (world) vs three.js, max distance = ${ownDiff}; non-finite = ${nonFinite}`);
console.log(`wrote ${output} (${fs.statSync(output).size} bytes)`);
