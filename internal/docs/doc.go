// Package docs holds the test that keeps the repository's Markdown linked:
// every relative link names a file that exists, and every anchor a heading
// that exists, with anchors computed as GitHub computes them.
package docs
