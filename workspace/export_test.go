package workspace

// SetApplyHook makes Apply call f before it applies change i (crash tests).
func SetApplyHook(f func(i int)) { applyHook = f }
