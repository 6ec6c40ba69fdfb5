package controller

// StatusApply is statusApply, for the integration tier's test of what the
// API server accepts.
var StatusApply = statusApply
