new project file
