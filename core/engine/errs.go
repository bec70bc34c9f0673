package engine

import "errors"

// joinErrs joins the non-nil errors; errdefs.Code of the result is the
// highest-priority class among them.
func joinErrs(errs []error) error {
	var keep []error
	for _, e := range errs {
		if e != nil {
			keep = append(keep, e)
		}
	}
	return errors.Join(keep...)
}
