// Package layout holds joinery's import rules, the package graph docs/architecture.md draws,
// as a test (TestImportRules, run by make verify): which room of the repository may import
// which, so that a change that lets provider knowledge into a neutral package, or points an
// import the wrong way, fails with the offending import named.
package layout
