// The apps' hash router. A view fetches before it draws, so a view the
// user has already left can finish after the one they went to and draw
// over it (a slow event page covered the hotel screen opened from it). The
// router counts views: when one the user left finishes, the current one is
// drawn again, at once if it is already shown, else as soon as it is.
// A view's error is shown only while it is the current view.

// router returns route(), which draws the view of the address with draw.
// onError(err, route) shows a current view's failure (route: to try again).
export function router(draw, onError) {
  let latest = 0, shown = 0, overdrawn = false;
  async function route() {
    const gen = ++latest;
    try {
      await draw();
    } catch (err) {
      if (gen === latest) onError(err, route);
    }
    if (gen !== latest) { // a view left behind finished: it may have drawn over the current one
      if (shown === latest) return route();
      overdrawn = true;
      return;
    }
    shown = gen;
    if (overdrawn) {
      overdrawn = false;
      return route();
    }
  }
  return route;
}
