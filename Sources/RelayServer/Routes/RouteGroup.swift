/// A set of routes the server answers. The composition root lists the groups as data
/// (``ServerComponents/routeGroups()``) and adds each one; a new endpoint is a new group or a
/// route in one, never a change to the root.
protocol RouteGroup {
    /// Adds the group's routes, with their middleware, to `routes`.
    func add(to routes: RouteTable)
}
