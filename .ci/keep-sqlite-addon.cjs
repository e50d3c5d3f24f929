// Keeps better-sqlite3's compiled addon where its installer (prebuild-install) looks before it downloads
// one: npm's cache, under the name of the download it stands for (the package's version, Node's ABI, the
// platform and the architecture). GitHub, where the prebuilt addons are, is out of reach here, so every
// `npm ci` compiled SQLite again: 3 of CI's minutes. The installer loads a kept addon before it takes it
// (prebuild-install/download.js) and compiles as before if that fails.
// Run by .ci/run, from the repository, after npm ci.
const fs = require("node:fs")
const path = require("node:path")
const zlib = require("node:zlib")
const { createRequire } = require("node:module")

const dir = path.dirname(require.resolve("better-sqlite3/package.json", { paths: [process.cwd()] }))
const pkg = require(path.join(dir, "package.json"))
const installer = createRequire(require.resolve("prebuild-install/package.json", { paths: [dir] }))
const util = installer("./util")
process.chdir(dir)
const kept = util.cachedPrebuild(util.getDownloadUrl({ ...installer("./rc")(pkg), pkg }))
const addon = "build/Release/better_sqlite3.node"

if (fs.existsSync(kept)) {
  console.log(`better-sqlite3 ${pkg.version}: its addon is kept in ${kept}`)
} else {
  require(path.resolve(addon))
  fs.mkdirSync(path.dirname(kept), { recursive: true })
  const partial = `${kept}.${process.pid}.tmp`
  installer("tar-fs")
    .pack(".", { entries: [addon] })
    .pipe(zlib.createGzip())
    .pipe(fs.createWriteStream(partial))
    .on("finish", () => {
      fs.renameSync(partial, kept)
      console.log(`better-sqlite3 ${pkg.version}: its compiled addon is kept in ${kept} for the next npm ci`)
    })
}
