// Package docs holds runner's reference pages, the Markdown files beside
// this one. It has no code: its tests check these pages, the README and the
// CHANGELOG — every code fence closes, every relative link and #anchor
// resolves, every runner document in a yaml block validates, and every sh
// block marked <!-- runs --> runs in a copy of the project and exits 0.
package docs
